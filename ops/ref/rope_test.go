package ref

import (
	"math"
	"testing"
)

// ropePair returns the indices rotated together as pair i.
func ropePair(r RoPE, i int) (int, int) {
	if r.NeoX {
		return i, i + r.Dims/2
	}
	return 2 * i, 2*i + 1
}

func TestRoPE(t *testing.T) {
	rng := newRNG(t)
	cases := []struct {
		r       RoPE
		headDim int
	}{
		{RoPE{Dims: 8, Base: 10000, FreqScale: 1}, 8},
		{RoPE{Dims: 16, Base: 10000, FreqScale: 1, NeoX: true}, 16},
		{RoPE{Dims: 64, Base: 10000, FreqScale: 1}, 64},
		{RoPE{Dims: 128, Base: 500000, FreqScale: 0.25, NeoX: true}, 128},
		{RoPE{Dims: 32, Base: 10000, FreqScale: 1, NeoX: true}, 80}, // partial rotary (phi2)
		{RoPE{Dims: 24, Base: 10000, FreqScale: 1}, 64},
	}
	for _, c := range cases {
		for _, pos := range []int32{0, 1, 17, 511, 2047, 2048} {
			const heads = 3
			x := randVec(rng, heads*c.headDim, 2)
			got := append([]float32(nil), x...)
			c.r.Apply(got, heads, c.headDim, pos)
			checkRoPE(t, c.r, c.headDim, pos, x, got)
		}
	}
}

func checkRoPE(t *testing.T, r RoPE, headDim int, pos int32, x, got []float32) {
	t.Helper()
	// ggml's angles: float32 powers by repeated multiplication
	step := float32(math.Pow(float64(r.Base), float64(-2/float32(r.Dims))))
	ggmlTheta := float32(pos)
	for i := 0; i < r.Dims/2; i++ {
		closed := float64(pos) * float64(r.FreqScale) * math.Pow(float64(r.Base), -2*float64(i)/float64(r.Dims))
		mirrored := float64(r.FreqScale * ggmlTheta)
		ggmlTheta *= step
		lo, hi := ropePair(r, i)
		for h := 0; h < len(x)/headDim; h++ {
			x0, x1 := float64(x[h*headDim+lo]), float64(x[h*headDim+hi])
			mag := math.Hypot(x0, x1)
			for _, ref := range []struct {
				theta, tol float64
			}{
				{mirrored, 4e-7 * (mag + 1e-3)},
				// the float32 angle drifts by about one ulp per step
				{closed, (float64(i+2)*2e-7*closed + 1e-6) * (mag + 1e-3)},
			} {
				c, s := math.Cos(ref.theta), math.Sin(ref.theta)
				within(t, "rope x0", got[h*headDim+lo], x0*c-x1*s, ref.tol)
				within(t, "rope x1", got[h*headDim+hi], x0*s+x1*c, ref.tol)
			}
		}
	}
	for h := 0; h < len(x)/headDim; h++ {
		for i := r.Dims; i < headDim; i++ {
			if got[h*headDim+i] != x[h*headDim+i] {
				t.Fatalf("pass-through element %d of head %d changed", i, h)
			}
		}
	}
}
