package quant

import (
	"fmt"
	"math"

	"github.com/weft-ml/weft/gguf"
)

// VecDotType returns the type activations are quantized to before a dot
// product with weights of type w, as ggml's CPU backend pairs them. Types
// without a dot product map to themselves.
func VecDotType(w gguf.TensorType) gguf.TensorType {
	switch w {
	case gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ8_0, gguf.TypeIQ4_NL:
		return gguf.TypeQ8_0
	case gguf.TypeQ4_1, gguf.TypeQ5_1:
		return gguf.TypeQ8_1
	case gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS,
		gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS, gguf.TypeIQ3_S,
		gguf.TypeIQ1_S, gguf.TypeIQ1_M, gguf.TypeTQ1_0, gguf.TypeTQ2_0:
		return gguf.TypeQ8_K
	}
	return w
}

// CheckVecDot validates once what VecDot and QuantizeRow assume: w has a dot
// product, n is a whole number of blocks, and the rows hold n elements.
func CheckVecDot(w gguf.TensorType, n int, wRow, aRow []byte) error {
	f, ok := formatOf(w)
	if !ok || f.dot == nil {
		return UnsupportedError("", w)
	}
	for _, r := range []struct {
		t gguf.TensorType
		b []byte
	}{{w, wRow}, {VecDotType(w), aRow}} {
		want, err := r.t.RowBytes(uint64(n))
		if err != nil {
			return err
		}
		if uint64(len(r.b)) < want {
			return fmt.Errorf("%d %s elements need %d bytes, got %d", n, r.t, want, len(r.b))
		}
	}
	return nil
}

// QuantizeRow is Quantize for the hot path: no allocation and no checks.
// The caller guarantees that t is supported, len(src) is a multiple of its
// block size and dst holds t.RowBytes(len(src)) bytes (see CheckVecDot);
// otherwise it may panic. Activation types are quantized exactly like
// llama.cpp's reference (generic) path.
func QuantizeRow(t gguf.TensorType, src []float32, dst []byte) {
	f, _ := formatOf(t)
	f.quant(src, dst)
}

// VecDot returns the dot product of n elements of a weight row of type w and
// an activation row of type VecDotType(w), with the per-block arithmetic of
// ggml's generic ggml_vec_dot_* kernels. Preconditions as for QuantizeRow
// (check them with CheckVecDot); a type without a dot product gives NaN.
func VecDot(w gguf.TensorType, n int, wRow, aRow []byte) float32 {
	f, ok := formatOf(w)
	if !ok || f.dot == nil {
		return float32(math.NaN())
	}
	return f.dot(n, wRow, aRow)
}

func dotF32(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n; i++ {
		x := math.Float32frombits(uint32(w[4*i]) | uint32(w[4*i+1])<<8 | uint32(w[4*i+2])<<16 | uint32(w[4*i+3])<<24)
		y := math.Float32frombits(uint32(a[4*i]) | uint32(a[4*i+1])<<8 | uint32(a[4*i+2])<<16 | uint32(a[4*i+3])<<24)
		sum += float32(x * y)
	}
	return sum
}

// dotF16 multiplies binary16 pairs (exact in float32) and sums in float32,
// as ggml's SIMD F16 kernel does per lane.
func dotF16(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n; i++ {
		sum += float32(f16(w, 2*i) * f16(a, 2*i))
	}
	return sum
}

// dotBF16 is dotF16 for bfloat16 (products are exact in float32 too).
func dotBF16(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n; i++ {
		x := BF16ToFP32(uint16(w[2*i]) | uint16(w[2*i+1])<<8)
		y := BF16ToFP32(uint16(a[2*i]) | uint16(a[2*i+1])<<8)
		sum += float32(x * y)
	}
	return sum
}
