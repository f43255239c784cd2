package ref

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every dot kernel against a float64 sum, with the worst-case bound of its
// float32 accumulation: each lane adds about n/16 terms.
func TestDotKernels(t *testing.T) {
	rng := newRNG(t)
	kernels := map[string]func(a, b []float32) float32{
		"tinyDot": tinyDot, "tinyDotBF16": tinyDotBF16,
		"vecDotF32": vecDotF32, "vecDotF16": vecDotF16, "vecDotBF16": vecDotBF16,
		"dotHalf/tiny": func(a, b []float32) float32 { return dotHalf(a, halves(b), true) },
		"dotHalf/vec":  func(a, b []float32) float32 { return dotHalf(a, halves(b), false) },
	}
	for _, n := range []int{32, 64, 96, 160, 4096} {
		a, b := randVec(rng, n, 1), randVec(rng, n, 1)
		for i := range b {
			b[i] = roundHalf(b[i]) // exact in every operand type's kernel below
			a[i] = roundBF16(a[i])
			b[i] = roundBF16(b[i])
		}
		var want, mag float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		for name, k := range kernels {
			within(t, name, k(a, b), want, float64(n/16+8)*0x1p-24*mag)
		}
	}
	for _, n := range []int{1, 7, 63, 65, 130} { // lengths only ggml_vec_dot sees
		a, b := randVec(rng, n, 1), randVec(rng, n, 1)
		var want, mag float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		within(t, "vecDotF32", vecDotF32(a, b), want, float64(n/16+n%64+8)*0x1p-24*mag) // the tail is serial
		within(t, "vecDotF16", vecDotF16(a, b), want, float64(n/16+8)*0x1p-24*mag)
	}
}

// TestVecDotF32TailIsNotFused pins ggml_vec_dot_f32's tail to rounded
// products added in turn: −1 + (1+2⁻¹²)² is 2⁻¹¹ with the product rounded
// (its 2⁻²⁴ is a tie, to even), 2⁻¹¹+2⁻²⁴ fused.
func TestVecDotF32TailIsNotFused(t *testing.T) {
	x := float32(1 + 0x1p-12)
	for _, pre := range []int{0, 64} { // all tail, and a tail after a block
		a, b := make([]float32, pre+2), make([]float32, pre+2)
		a[pre], b[pre] = 1, -1
		a[pre+1], b[pre+1] = x, x
		require.Equal(t, float32(0x1p-11), VecDotF32(a, b), "after %d block values", pre)
	}
}

func halves(v []float32) []uint16 {
	h := make([]uint16, len(v))
	for i, x := range v {
		h[i] = floatToHalf(x)
	}
	return h
}
