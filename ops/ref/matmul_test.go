package ref

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// encodeWeights stores w as rows of type wt with package quant.
func encodeWeights(t *testing.T, wt gguf.TensorType, w []float32) []byte {
	t.Helper()
	b, err := quant.QuantizeAlloc(wt, w)
	if err != nil {
		t.Fatalf("encode %s: %v", wt, err)
	}
	return b
}

// decodeAll widens a whole buffer with package quant.
func decodeAll(t *testing.T, typ gguf.TensorType, b []byte, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := quant.Dequantize(typ, b, out); err != nil {
		t.Fatalf("decode %s: %v", typ, err)
	}
	return out
}

// activationsAsSeen returns x as the dot product sees it after conversion
// to the weight type's dot-product type.
func activationsAsSeen(t *testing.T, wt gguf.TensorType, x []float32) []float64 {
	out := make([]float64, len(x))
	switch vt := quant.VecDotType(wt); vt {
	case gguf.TypeF32:
		for i, v := range x {
			out[i] = float64(v)
		}
	case gguf.TypeF16:
		for i, v := range x {
			out[i] = f16Of(v)
		}
	case gguf.TypeBF16:
		for i, v := range x {
			out[i] = bf16Of(v)
		}
	default:
		for i, v := range decodeAll(t, vt, encodeWeights(t, vt, x), len(x)) {
			out[i] = float64(v)
		}
	}
	return out
}

func TestMatMulAgainstFloat64(t *testing.T) {
	rng := newRNG(t)
	shapes := []struct{ rows, cols, nTok int }{
		{7, 64, 1}, {7, 64, 2}, {33, 48, 3}, {5, 100, 1}, {5, 100, 4}, {9, 256, 1}, {9, 288, 5}, {3, 512, 2},
	}
	types := []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K}
	for _, wt := range types {
		for _, s := range shapes {
			if s.cols%int(wt.BlockSize()) != 0 {
				continue
			}
			matchFloat64(t, wt, s.rows, s.cols, s.nTok, randVec(rng, s.rows*s.cols, 0.1), randVec(rng, s.nTok*s.cols, 2))
		}
	}
}

func matchFloat64(t *testing.T, wt gguf.TensorType, rows, cols, nTok int, wf, x []float32) {
	t.Helper()
	w := encodeWeights(t, wt, wf)
	wd := decodeAll(t, wt, w, rows*cols)
	dst := make([]float32, rows*nTok)
	poison(dst)
	scratch := make([]byte, ActScratchBytes(wt, cols, nTok))
	if err := MatMul(dst, w, wt, rows, cols, x, nTok, scratch); err != nil {
		t.Fatalf("%s %d×%d×%d: %v", wt, rows, cols, nTok, err)
	}
	xs := activationsAsSeen(t, wt, x)
	tol := float64(cols/16+8) * 0x1p-24
	if !isFloatType(wt) {
		tol = 1e-5 // block scales are float32 and rounded per block
	}
	for tk := 0; tk < nTok; tk++ {
		for r := 0; r < rows; r++ {
			var want, mag float64
			for c := 0; c < cols; c++ {
				p := float64(wd[r*cols+c]) * xs[tk*cols+c]
				want += p
				mag += math.Abs(p)
			}
			if !within(t, wt.String()+" matmul", dst[tk*rows+r], want, tol*mag) {
				return
			}
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	w := make([]byte, 4*8*16)
	x := make([]float32, 2*16)
	dst := make([]float32, 2*8)
	ok := make([]byte, ActScratchBytes(gguf.TypeF32, 16, 2))
	cases := map[string]error{
		"short weights": MatMul(dst, w[:100], gguf.TypeF32, 8, 16, x, 2, ok),
		"short input":   MatMul(dst, w, gguf.TypeF32, 8, 16, x[:20], 2, ok),
		"short output":  MatMul(dst[:9], w, gguf.TypeF32, 8, 16, x, 2, ok),
		"short scratch": MatMul(dst, w, gguf.TypeF32, 8, 16, x, 2, ok[:3]),
		"zero rows":     MatMul(dst, w, gguf.TypeF32, 0, 16, x, 2, ok),
		"partial block": MatMul(dst, w, gguf.TypeQ8_0, 2, 16, x, 2, ok),
		"no dot type":   MatMul(dst, w, gguf.TypeQ8_1, 2, 32, x, 1, make([]byte, 1024)),
		"unaligned":     MatMul(dst, w, gguf.TypeF32, 8, 16, x, 2, make([]byte, 200)[1:]),
	}
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestGetRows(t *testing.T) {
	rng := newRNG(t)
	const rows, cols = 11, 64
	wf := randVec(rng, rows*cols, 1)
	ids := []int32{3, 0, 10, 3}
	for _, wt := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0} {
		w := encodeWeights(t, wt, wf)
		all := decodeAll(t, wt, w, rows*cols)
		dst := make([]float32, len(ids)*cols)
		poison(dst)
		if err := GetRows(dst, w, wt, cols, ids); err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			for c := 0; c < cols; c++ {
				if math.Float32bits(dst[i*cols+c]) != math.Float32bits(all[int(id)*cols+c]) {
					t.Fatalf("%s row %d col %d: %g want %g", wt, id, c, dst[i*cols+c], all[int(id)*cols+c])
				}
			}
		}
		if GetRows(dst, w, wt, cols, []int32{rows}) == nil || GetRows(dst, w, wt, cols, []int32{-1}) == nil {
			t.Errorf("%s: out-of-range id accepted", wt)
		}
	}
	if GetRows(make([]float32, 10), make([]byte, 4*64), gguf.TypeF32, 64, []int32{0}) == nil {
		t.Error("short output accepted")
	}
}

// The F32 weight bytes are read little-endian regardless of the host.
func TestMatMulReadsLittleEndian(t *testing.T) {
	w := make([]byte, 4*16)
	x := make([]float32, 16)
	for i := range x {
		binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(float32(i+1)))
		x[i] = 1
	}
	dst := make([]float32, 1)
	if err := MatMul(dst, w, gguf.TypeF32, 1, 16, x, 1, make([]byte, ActScratchBytes(gguf.TypeF32, 16, 1))); err != nil || dst[0] != 136 {
		t.Fatalf("got %g, %v; want 136", dst[0], err)
	}
}
