package ref

import (
	"math"
	"math/big"
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

// TestYaRNCorrDims checks the correction range against the closed form
// evaluated in float64 (Qwen2-, Llama-2- and Llama-3-like settings).
func TestYaRNCorrDims(t *testing.T) {
	for _, c := range []struct {
		dims, ctx int
		base      float32
		want      [2]float32
	}{
		{64, 32768, 1e6, [2]float32{11, 20}},
		{128, 4096, 10000, [2]float32{20, 46}},
		{128, 8192, 500000, [2]float32{18, 35}},
		{8, 16, 10000, [2]float32{0, 1}}, // start clamped to 0
	} {
		if got := YaRNCorrDims(c.dims, c.ctx, c.base, 32, 1); got != c.want {
			t.Errorf("YaRNCorrDims(%d, %d, %g) = %v, want %v", c.dims, c.ctx, c.base, got, c.want)
		}
	}
}

// TestRoPEExtensions checks frequency factors and YaRN against the
// formulas of rope_yarn evaluated in float64: pair i's angle θ =
// pos·base^(-2i/d)/f_i interpolated to s·θ, mixed back toward θ by the
// ramp between the correction dims, cos and sin scaled by
// a·(1 + 0.1·ln(1/s)).
func TestRoPEExtensions(t *testing.T) {
	rng := newRNG(t)
	factors := make([]float32, 32)
	for i := range factors {
		factors[i] = 1 + 7*float32(i)/31 // Llama 3.1's span: 1 … 8
	}
	yarn := RoPE{Dims: 64, Base: 1e6, FreqScale: 0.25, NeoX: true, ExtFactor: 1, AttnFactor: 1, CorrDims: YaRNCorrDims(64, 32768, 1e6, 32, 1)}
	cases := []RoPE{
		{Dims: 64, Base: 500000, FreqScale: 1, Factors: factors},
		yarn,
		{Dims: 64, Base: 10000, FreqScale: 0.5, ExtFactor: 0.5, AttnFactor: 1.5, CorrDims: [2]float32{3, 9}, Factors: factors},
	}
	for _, r := range cases {
		for _, pos := range []int32{0, 1, 100, 4095, 70000} {
			got := r.CosSin(pos, make([]float32, r.Dims))
			a := float64(r.AttnFactor)
			if a == 0 {
				a = 1
			}
			if r.ExtFactor != 0 {
				a *= 1 + 0.1*math.Log(1/float64(r.FreqScale))
			}
			for i := 0; i < r.Dims/2; i++ {
				theta := float64(pos) * math.Pow(float64(r.Base), -2*float64(i)/float64(r.Dims))
				if r.Factors != nil {
					theta /= float64(r.Factors[i])
				}
				angle := float64(r.FreqScale) * theta
				if r.ExtFactor != 0 {
					y := (float64(i) - float64(r.CorrDims[0])) / math.Max(0.001, float64(r.CorrDims[1]-r.CorrDims[0]))
					mix := (1 - math.Min(1, math.Max(0, y))) * float64(r.ExtFactor)
					angle = angle*(1-mix) + theta*mix
				}
				// float32 angles drift by about an ulp a step (see checkRoPE)
				tol := (float64(i+2)*3e-7*math.Abs(angle) + 1e-6) * a
				if d := math.Abs(float64(got[2*i]) - a*math.Cos(angle)); d > tol {
					t.Fatalf("%+v pos %d pair %d: cos %v, want %v", r, pos, i, got[2*i], a*math.Cos(angle))
				}
				if d := math.Abs(float64(got[2*i+1]) - a*math.Sin(angle)); d > tol {
					t.Fatalf("%+v pos %d pair %d: sin %v, want %v", r, pos, i, got[2*i+1], a*math.Sin(angle))
				}
			}
			x := randVec(rng, 2*r.Dims, 2)
			y := append([]float32(nil), x...)
			r.Apply(y, 2, r.Dims, pos)
			checkRotated(t, r, x, y, got)
		}
	}
}

// checkRotated checks that Apply rotated every pair by the table's cos
// and sin.
func checkRotated(t *testing.T, r RoPE, x, y, cs []float32) {
	t.Helper()
	for h := 0; h < len(x)/r.Dims; h++ {
		for i := 0; i < r.Dims/2; i++ {
			lo, hi := ropePair(r, i)
			lo, hi = lo+h*r.Dims, hi+h*r.Dims
			c, s := cs[2*i], cs[2*i+1]
			if want := fusedExact(x[lo], c, -float32(x[hi]*s)); y[lo] != want {
				t.Fatalf("head %d pair %d: %v, want %v", h, i, y[lo], want)
			}
			if want := fusedExact(x[lo], s, float32(x[hi]*c)); y[hi] != want {
				t.Fatalf("head %d pair %d: %v, want %v", h, i, y[hi], want)
			}
		}
	}
}

// fusedExact is a·b+c rounded once to float32, in exact big.Float
// arithmetic: ggml's RoPE as GCC compiles it fuses x0·c with the rounded
// second product (see Rotate).
func fusedExact(a, b, c float32) float32 {
	p := new(big.Float).SetPrec(200).Mul(big.NewFloat(float64(a)), big.NewFloat(float64(b)))
	f, _ := p.Add(p, big.NewFloat(float64(c))).Float32()
	return f
}
