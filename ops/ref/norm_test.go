package ref

import (
	"math"
	"testing"
)

func TestRMSNorm(t *testing.T) {
	rng := newRNG(t)
	for _, n := range []int{1, 7, 64, 288, 1001} {
		x := randVec(rng, 3*n, 3)
		dst := make([]float32, len(x))
		poison(dst)
		RMSNorm(dst, x, n, 1e-5)
		for r := 0; r < 3; r++ {
			var ss float64
			for _, v := range x[r*n : (r+1)*n] {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/float64(n)+1e-5)
			for i := r * n; i < (r+1)*n; i++ {
				want := float64(x[i]) * inv
				within(t, "rmsnorm", dst[i], want, 4e-7*math.Abs(want)+1e-9)
			}
		}
		alias := append([]float32(nil), x...)
		RMSNorm(alias, alias, n, 1e-5)
		for i := range alias {
			if alias[i] != dst[i] {
				t.Fatalf("aliased RMSNorm differs at %d", i)
			}
		}
	}
}

func TestLayerNorm(t *testing.T) {
	rng := newRNG(t)
	for _, n := range []int{2, 9, 80, 2560} {
		x := randVec(rng, 2*n, 2)
		for i := range x {
			x[i] += 0.5 // a mean away from zero
		}
		dst := make([]float32, len(x))
		poison(dst)
		LayerNorm(dst, x, n, 1e-5)
		for r := 0; r < 2; r++ {
			row := x[r*n : (r+1)*n]
			var mean, v2 float64
			for _, v := range row {
				mean += float64(v)
			}
			mean /= float64(n)
			for _, v := range row {
				v2 += (float64(v) - mean) * (float64(v) - mean)
			}
			inv := 1 / math.Sqrt(v2/float64(n)+1e-5)
			// The float32 mean is off by up to half an ulp of the row's
			// largest value; centring turns that into an absolute error
			// that matters when values nearly coincide (n = 2).
			var big float64
			for _, v := range row {
				big = max(big, math.Abs(float64(v)))
			}
			centring := 2 * big * 0x1p-24 * inv
			for i, v := range row {
				want := (float64(v) - mean) * inv
				within(t, "layernorm", dst[r*n+i], want, 2e-6*math.Abs(want)+2e-7+centring)
			}
		}
	}
}
