package ref

import (
	"math"
	"testing"
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
		within(t, "vecDotF32", vecDotF32(a, b), want, float64(n/16+8)*0x1p-24*mag)
		within(t, "vecDotF16", vecDotF16(a, b), want, float64(n/16+8)*0x1p-24*mag)
	}
}

func halves(v []float32) []uint16 {
	h := make([]uint16, len(v))
	for i, x := range v {
		h[i] = floatToHalf(x)
	}
	return h
}
