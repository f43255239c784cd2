package simd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// gemmCase is one product: weights, activations and an output whose
// stride leaves poisoned gaps between tokens.
type gemmCase struct {
	typ, at            gguf.TensorType
	n, nRows, nTok     int
	w, a               []byte
	wStride, aStride   int
	dst                []float32
	dstStride, wantLen int
}

// newGemmCase fills nRows weight rows and nTok activation rows with fresh
// random values, rows a few bytes apart (they need not be packed).
func newGemmCase(t *testing.T, r *rand.Rand, typ gguf.TensorType, n, nRows, nTok int) *gemmCase {
	at := quant.VecDotType(typ)
	wb, _ := typ.RowBytes(uint64(n))
	ab, _ := at.RowBytes(uint64(n))
	c := &gemmCase{typ: typ, at: at, n: n, nRows: nRows, nTok: nTok,
		wStride: int(wb) + 3, aStride: int(ab) + 7, dstStride: nRows + 2}
	c.w = make([]byte, nRows*c.wStride)
	for i := range nRows {
		copy(c.w[i*c.wStride:], quantized(t, r, typ, n))
	}
	c.a = make([]byte, nTok*c.aStride)
	for i := range nTok {
		copy(c.a[i*c.aStride:], quantized(t, r, at, n))
	}
	c.dst = nanRow(nTok*c.dstStride + 1)
	return c
}

func (c *gemmCase) wRow(i int) []byte { return c.w[i*c.wStride : i*c.wStride+c.wStride-3] }
func (c *gemmCase) aRow(i int) []byte { return c.a[i*c.aStride : i*c.aStride+c.aStride-7] }

// setUnitScales sets every block scale of every row to 1.
func (c *gemmCase) setUnitScales() {
	for i := range c.nRows {
		setScalesOne(c.typ, c.wRow(i))
	}
	for j := range c.nTok {
		setScalesOne(c.at, c.aRow(j))
	}
}

func (c *gemmCase) run() {
	Gemm(c.typ)(c.n, c.w, c.wStride, c.nRows, c.a, c.aStride, c.nTok, c.dst, c.dstStride)
}

// check compares every output with the reference dot product (exactly when
// exact) and that the gaps and the end kept their poison.
func (c *gemmCase) check(t *testing.T, exact bool) {
	t.Helper()
	acts := make([][]float64, c.nTok)
	for j := range acts {
		acts[j] = dequant(t, c.at, c.aRow(j), c.n)
	}
	for i := range c.nRows {
		row := c.wRow(i)
		mag := magnitude(t, c.typ, row, c.n)
		for j := range c.nTok {
			want := quant.VecDot(c.typ, c.n, row, c.aRow(j))
			got := c.dst[j*c.dstStride+i]
			bound := dotBound(mag, acts[j], steps(c.typ, c.n))
			if exact {
				bound = 0
			}
			if d := math.Abs(float64(got - want)); !(d <= bound) {
				t.Errorf("%s n=%d %d×%d: dst[row %d, tok %d] = %g, want %g (bound %g)",
					c.typ, c.n, c.nRows, c.nTok, i, j, got, want, bound)
			}
		}
	}
	for j := range c.nTok {
		for i := c.nRows; i < c.dstStride; i++ {
			if v := c.dst[j*c.dstStride+i]; !math.IsNaN(float64(v)) {
				t.Errorf("%s %d×%d: wrote %g into the gap at tok %d col %d", c.typ, c.nRows, c.nTok, v, j, i)
			}
		}
	}
	if !math.IsNaN(float64(c.dst[len(c.dst)-1])) {
		t.Errorf("%s %d×%d: wrote past the end", c.typ, c.nRows, c.nTok)
	}
}

var gemmShapes = [][2]int{{1, 1}, {4, 1}, {4, 4}, {3, 5}, {5, 3}, {8, 2}, {13, 7}, {12, 9}, {4, 6}}

func TestGemm(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, typ := range dotTypes {
			for _, n := range awkwardLengths(typ)[:3] {
				for _, s := range gemmShapes {
					c := newGemmCase(t, r, typ, n, s[0], s[1])
					c.run()
					c.check(t, false)
				}
			}
		}
	})
}

// TestGemmIntegerExact sets every block scale to 1, so each output is an
// integer sum that any summation order gives exactly.
func TestGemmIntegerExact(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
			for _, n := range awkwardLengths(typ)[:3] {
				c := newGemmCase(t, r, typ, n, 9, 7)
				c.setUnitScales()
				c.run()
				c.check(t, true)
			}
		}
	})
}

// TestGemmMatchesRows checks the GEMM against the row kernel it replaces on
// a model-sized product.
func TestGemmMatchesRows(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	r := newRand(t)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		c := newGemmCase(t, r, typ, 2048, 36, 11)
		c.run()
		c.check(t, false)
	}
}

// TestGemmKernelsPresent guards against a table that silently loses its
// GEMM tiles, which every other test would pass through the fallback.
func TestGemmKernelsPresent(t *testing.T) {
	want := []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeF16}
	for _, v := range available[1:] {
		for _, typ := range want {
			if _, ok := v.gemms[typ]; !ok {
				t.Errorf("variant %s has no GEMM tiles for %s", v.name, typ)
			}
		}
	}
}

// TestGemmF16HalfChunks covers F16 lengths that are whole 16-value chunks
// but not whole 32-value ones (attention head dimensions such as Phi-2's
// 80), which the F16 tiles take directly.
func TestGemmF16HalfChunks(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, n := range []int{16, 48, 80, 112, 16 * 41} {
			for _, s := range gemmShapes {
				c := newGemmCase(t, r, gguf.TypeF16, n, s[0], s[1])
				c.run()
				c.check(t, false)
			}
		}
	})
}

// TestGemmF16TilesTakeHalfChunks checks that the tiles, not the row-by-row
// fallback, compute an 80-value product: zeros appended to every row must
// leave each (row, token) sum's bits alone, as they do in a tile's single
// in-order accumulator (and as they need not in the fallback's split into
// a 64-value SIMD body and a float64 tail).
func TestGemmF16TilesTakeHalfChunks(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		if Variant() == "purego" {
			t.Skip("no tiles")
		}
		for _, s := range [][2]int{{4, 1}, {4, 4}, {8, 2}, {12, 9}, {4, 6}} { // whole tiles of 4 rows
			c := newGemmCase(t, r, gguf.TypeF16, 96, s[0], s[1])
			for i := range c.nRows {
				clear(c.wRow(i)[2*80:])
			}
			for j := range c.nTok {
				clear(c.aRow(j)[2*80:])
			}
			c.run()
			want := append([]float32(nil), c.dst...)
			c.n = 80
			c.run()
			for i, v := range c.dst {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(v), "%d×%d element %d: n=80 gives %g, zero-padded n=96 %g", s[0], s[1], i, v, want[i])
			}
		}
	})
}
