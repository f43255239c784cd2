package ref

import "math"

// RoPE rotates pairs of elements of each attention head by position-dependent
// angles, as ggml_rope_ext does for the llama family (no YaRN extension, no
// frequency factors, attention factor 1).
type RoPE struct {
	Dims      int     // rotated elements per head (even, <= headDim); the rest pass through
	Base      float32 // frequency base, e.g. 10000
	FreqScale float32 // linear position scaling; 1 for none
	NeoX      bool    // pair element i with i+Dims/2 (GPT-NeoX) instead of i with i+1
}

// Apply rotates one token's heads in place: x holds nHeads rows of headDim
// elements, pos is the token's position. The angle of pair i is
// pos·FreqScale·Base^(-2i/Dims), with Base^(-2/Dims) raised to the i-th power
// by repeated float32 multiplication starting from pos, exactly as
// ggml_rope_cache_init does; cos and sin are then taken in float32.
// Preconditions: len(x) >= nHeads·headDim, Dims even and <= headDim.
func (r RoPE) Apply(x []float32, nHeads, headDim int, pos int32) {
	thetaScale := powf(r.Base, -2/float32(r.Dims))
	theta := float32(pos)
	half := r.Dims / 2
	for i := 0; i < half; i++ {
		angle := r.FreqScale * theta
		c, s := cosf(angle), sinf(angle)
		theta *= thetaScale
		lo, hi := 2*i, 2*i+1
		if r.NeoX {
			lo, hi = i, i+half
		}
		for h := 0; h < nHeads; h++ {
			head := x[h*headDim : (h+1)*headDim]
			x0, x1 := head[lo], head[hi]
			head[lo] = float32(x0*c) - float32(x1*s)
			head[hi] = float32(x0*s) + float32(x1*c)
		}
	}
}

// powf, cosf and sinf stand in for libm's float32 functions: evaluated in
// float64 and rounded once, so correctly rounded in all but rare ties.
func powf(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }
func cosf(x float32) float32    { return float32(math.Cos(float64(x))) }
func sinf(x float32) float32    { return float32(math.Sin(float64(x))) }
