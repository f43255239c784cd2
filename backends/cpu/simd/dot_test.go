package simd

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// dotTypes are the weight types with generated kernels plus two without,
// which must fall back to the reference (Q5_0, IQ1_S).
var dotTypes = []gguf.TensorType{
	gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ4_K, gguf.TypeQ6_K,
	gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeTQ2_0, gguf.TypeIQ2_XXS, gguf.TypeIQ3_S, gguf.TypeQ5_K, gguf.TypeQ2_K,
	gguf.TypeQ5_0, gguf.TypeIQ1_S,
}

// awkwardLengths returns row lengths for t: one block, odd block counts,
// many blocks, and for F16 and BF16 lengths that leave a tail.
func awkwardLengths(t gguf.TensorType) []int {
	bs := int(t.BlockSize())
	if t == gguf.TypeF16 || t == gguf.TypeBF16 {
		return []int{1, 31, 32, 33, 96, 200, 1024, 4096 + 7}
	}
	if bs == 256 {
		return []int{256, 768, 2048}
	}
	return []int{bs, 3 * bs, 7 * bs, 33 * bs, 128 * bs}
}

// steps is how many terms a serial reference sum has for n elements.
func steps(t gguf.TensorType, n int) int {
	if t == gguf.TypeF16 || t == gguf.TypeBF16 {
		return n
	}
	return n / int(t.BlockSize())
}

func TestVecDot(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, typ := range dotTypes {
			at := quant.VecDotType(typ)
			for _, n := range awkwardLengths(typ) {
				w, a := quantized(t, r, typ, n), quantized(t, r, at, n)
				want := quant.VecDot(typ, n, w, a)
				got := VecDot(typ)(n, w, a)
				bound := dotBound(magnitude(t, typ, w, n), dequant(t, at, a, n), steps(typ, n))
				if d := math.Abs(float64(got - want)); !(d <= bound) {
					t.Errorf("%s n=%d: got %g, want %g (diff %g > bound %g)", typ, n, got, want, d, bound)
				}
			}
		}
	})
}

// TestVecDotRows checks every row count around the multi-row width against
// the single-row reference, on a poisoned output; DecodeRows likewise.
func TestVecDotRows(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, typ := range dotTypes {
			at := quant.VecDotType(typ)
			for _, n := range awkwardLengths(typ)[:3] {
				for _, rows := range []int{1, 3, 4, 5, 8, 9, 13} {
					checkRows(t, r, VecDotRows(typ), typ, at, n, rows)
					checkRows(t, r, DecodeRows(typ), typ, at, n, rows)
				}
			}
		}
	})
}

func checkRows(t *testing.T, r *rand.Rand, f RowsFunc, typ, at gguf.TensorType, n, rows int) {
	rb, _ := typ.RowBytes(uint64(n))
	stride := int(rb) + 5 // rows need not be packed
	w := make([]byte, (rows-1)*stride+int(rb))
	for i := range rows {
		copy(w[i*stride:], quantized(t, r, typ, n))
	}
	a := quantized(t, r, at, n)
	dst := nanRow(rows + 1)
	f(n, w, stride, rows, a, dst)
	aw := dequant(t, at, a, n)
	for i := range rows {
		row := w[i*stride : i*stride+int(rb)]
		want := quant.VecDot(typ, n, row, a)
		bound := dotBound(magnitude(t, typ, row, n), aw, steps(typ, n))
		if d := math.Abs(float64(dst[i] - want)); !(d <= bound) {
			t.Errorf("%s n=%d rows=%d row %d: got %g, want %g (bound %g)", typ, n, rows, i, dst[i], want, bound)
		}
	}
	if !math.IsNaN(float64(dst[rows])) {
		t.Errorf("%s rows=%d: wrote past the last row", typ, rows)
	}
}

// TestIntegerSumsExact sets every block scale to 1, so each result is an
// integer sum below 2²⁴ that any summation order must give exactly.
func TestIntegerSumsExact(t *testing.T) {
	t.Run("bit-exact", testBitExact)
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeTQ2_0, gguf.TypeQ5_K} {
			at := quant.VecDotType(typ)
			for _, n := range awkwardLengths(typ) {
				w, a := quantized(t, r, typ, n), quantized(t, r, at, n)
				setScalesOne(typ, w)
				setScalesOne(at, a)
				want := quant.VecDot(typ, n, w, a)
				if got := VecDot(typ)(n, w, a); got != want {
					t.Errorf("%s n=%d: got %v, want exactly %v", typ, n, got, want)
				}
				dst := nanRow(5)
				VecDotRows(typ)(n, repeat(w, 5), len(w), 5, a, dst)
				for i, got := range dst {
					if got != want {
						t.Errorf("%s n=%d rows: dst[%d] = %v, want exactly %v", typ, n, i, got, want)
					}
				}
			}
		}
	})
}

// setScalesOne sets the block scales (and Q4_K's min scale) of a row to 1.
func setScalesOne(typ gguf.TensorType, b []byte) {
	one := quant.FP32ToFP16(1)
	var f16At []int
	switch typ {
	case gguf.TypeQ8_K: // float32 d
		for off := 0; off < len(b); off += int(typ.BlockBytes()) {
			binary.LittleEndian.PutUint32(b[off:], math.Float32bits(1))
		}
		return
	case gguf.TypeQ4_K, gguf.TypeQ5_K:
		f16At = []int{0, 2}
	case gguf.TypeQ6_K:
		f16At = []int{208}
	case gguf.TypeTQ2_0:
		f16At = []int{64}
	case gguf.TypeIQ4_XS: // and every sub-block scale 33, i.e. 1 after its −32
		f16At = []int{0}
		for off := 0; off < len(b); off += int(typ.BlockBytes()) {
			binary.LittleEndian.PutUint16(b[off+2:], 0xaaaa)
			copy(b[off+4:off+8], []byte{0x11, 0x11, 0x11, 0x11})
		}
	default:
		f16At = []int{0}
	}
	for _, off := range f16At {
		setScales(b, int(typ.BlockBytes()), off, one)
	}
}

// setScales writes the binary16 h at offset at of every block.
func setScales(b []byte, blockBytes, at int, h uint16) {
	for off := 0; off < len(b); off += blockBytes {
		binary.LittleEndian.PutUint16(b[off+at:], h)
	}
}

func repeat(b []byte, k int) []byte {
	out := make([]byte, 0, k*len(b))
	for range k {
		out = append(out, b...)
	}
	return out
}

// testBitExact: the TQ2_0 and Q2_K kernels reduce each block's integer
// sums before its float terms, in quant.VecDot's order, so any scales give
// quant.VecDot's bits.
func testBitExact(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, typ := range []gguf.TensorType{gguf.TypeTQ2_0, gguf.TypeQ2_K} {
			for _, n := range awkwardLengths(typ) {
				w, a := quantized(t, r, typ, n), quantized(t, r, gguf.TypeQ8_K, n)
				if want, got := quant.VecDot(typ, n, w, a), VecDot(typ)(n, w, a); got != want {
					t.Errorf("%s n=%d: got %v, want exactly %v", typ, n, got, want)
				}
			}
		}
	})
}
