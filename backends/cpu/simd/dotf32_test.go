package simd

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/ops/ref"
)

// TestDotF32Rows holds VecDotF32Rows and TinyDotF32Rows to ref.VecDotF32
// and ref.TinyDotF32 bit for bit on every variant: every length 1…300
// (whole blocks of 64, tails, and lengths under one vector), row counts
// that fill the kernels' groups of rows and leave some over, and strides
// longer than a row, on values spread over six decades so that any other
// summation order shows.
func TestDotF32Rows(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		r := newRand(t)
		for n := 1; n <= 300; n++ {
			rows := 1 + r.IntN(11)
			stride := n + r.IntN(5)
			a, b := randomFloats(r, n), randomFloats(r, (rows-1)*stride+n)
			dst := make([]float32, rows)
			VecDotF32Rows(a, b, stride, dst)
			requireRows(t, "vec", ref.VecDotF32, a, b, stride, dst)
			if n%16 == 0 {
				TinyDotF32Rows(a, b, stride, dst)
				requireRows(t, "tiny", ref.TinyDotF32, a, b, stride, dst)
			}
		}
	})
}

func requireRows(t *testing.T, what string, dot func(a, b []float32) float32, a, b []float32, stride int, dst []float32) {
	t.Helper()
	for i, got := range dst {
		want := dot(a, b[i*stride:])
		require.Equal(t, math.Float32bits(want), math.Float32bits(got),
			"%s n=%d rows=%d stride=%d row %d: want %g, got %g", what, len(a), len(dst), stride, i, want, got)
	}
}

// TestDotF32RowsEdges covers no rows and an empty a (zeros, as ref).
func TestDotF32RowsEdges(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		VecDotF32Rows([]float32{1}, nil, 1, nil)
		dst := []float32{5, 5}
		VecDotF32Rows(nil, nil, 0, dst)
		require.Equal(t, []float32{0, 0}, dst)
		require.Panics(t, func() { TinyDotF32Rows(make([]float32, 8), make([]float32, 8), 8, dst[:1]) })
	})
}
