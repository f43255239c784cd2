package ref

import "math"

// RoPE rotates pairs of elements of each attention head by position-dependent
// angles, as ggml_rope_ext does for the llama family, including its two
// context-extension schemes: per-pair frequency factors (Llama 3.1's
// rope_freqs tensor) and YaRN. The zero values of the extension fields
// leave plain RoPE.
type RoPE struct {
	Dims      int     // rotated elements per head (even, <= headDim); the rest pass through
	Base      float32 // frequency base, e.g. 10000
	FreqScale float32 // linear position scaling; 1 for none
	NeoX      bool    // pair element i with i+Dims/2 (GPT-NeoX) instead of i with i+1

	// Factors, when set, divide pair i's angle by Factors[i] (Dims/2 values).
	Factors []float32
	// ExtFactor mixes YaRN's extrapolated angles into the interpolated ones
	// for the pairs between CorrDims (0: no YaRN, as for linear scaling).
	ExtFactor float32
	// AttnFactor scales cos and sin (0 is taken as 1); YaRN multiplies it
	// by 1 + 0.1·ln(1/FreqScale).
	AttnFactor float32
	// CorrDims are YaRN's correction range (see YaRNCorrDims).
	CorrDims [2]float32

	// Unfused rounds both products of the rotation before the sum, as the
	// Vulkan shaders do (`precise`): lavapipe lowers fma to a multiply and
	// an add, so the CPU's fused rotation cannot be reproduced on every
	// device, while separate roundings can.
	Unfused bool
}

// Apply rotates one token's heads in place: x holds nHeads rows of headDim
// elements, pos is the token's position. Preconditions: len(x) >=
// nHeads·headDim, Dims even and <= headDim, len(Factors) >= Dims/2 when set.
func (r RoPE) Apply(x []float32, nHeads, headDim int, pos int32) {
	var buf [512]float32 // heads up to 512 wide need no allocation
	cs := buf[:]
	if r.Dims > len(buf) {
		cs = make([]float32, r.Dims)
	}
	r.Rotate(x, nHeads, headDim, r.CosSin(pos, cs))
}

// Rotate rotates one token's heads in place by the angles whose cos and
// sin cs holds (as CosSin writes them): x0·c − x1·s and x0·s + x1·c as
// ggml's compiled code computes them, the second product rounded to
// float32 and the first fused with the sum (GCC contracts a·b ± c·d to
// fma(a, b, ±c·d) by default; llama.cpp's dumped RoPE outputs confirm
// it bit for bit). Preconditions as Apply's, len(cs) >= Dims.
func (r RoPE) Rotate(x []float32, nHeads, headDim int, cs []float32) {
	half := r.Dims / 2
	for i := 0; i < half; i++ {
		c, s := cs[2*i], cs[2*i+1]
		lo, hi := 2*i, 2*i+1
		if r.NeoX {
			lo, hi = i, i+half
		}
		for h := 0; h < nHeads; h++ {
			head := x[h*headDim : (h+1)*headDim]
			x0, x1 := head[lo], head[hi]
			if r.Unfused {
				head[lo] = float32(x0*c) - float32(x1*s)
				head[hi] = float32(x0*s) + float32(x1*c)
				continue
			}
			head[lo] = fma32(x0, c, -float32(x1*s))
			head[hi] = fma32(x0, s, float32(x1*c))
		}
	}
}

// CosSin writes the cos and sin of every pair's angle at position pos to
// out (cos of pair i at 2i, sin at 2i+1; len(out) >= Dims) and returns
// it, exactly as ggml_rope_cache_init computes them: the base angle
// pos·Base^(-2i/Dims), with Base^(-2/Dims) raised to the i-th power by
// repeated float32 multiplication starting from pos, divided by the
// pair's factor; then rope_yarn's interpolation, mix and magnitude, cos
// and sin taken in float32 by glibc's algorithm (trig.go).
func (r RoPE) CosSin(pos int32, out []float32) []float32 {
	mscale := r.AttnFactor
	if mscale == 0 {
		mscale = 1
	}
	if r.ExtFactor != 0 {
		mscale *= 1 + float32(0.1*logf(1/r.FreqScale)) // rounded: no fused multiply-add
	}
	return r.cosSin(pos, mscale, out)
}

// ShiftCosSin is CosSin with magnitude 1: the pure rotation by the angles
// of position delta, which moves keys already rotated (and scaled) for
// position p to position p+delta (a context shift). Without YaRN or an
// attention factor it equals CosSin.
//
// llama.cpp c392e5094 applies the shift with ggml_rope_ext, so its keys
// gain YaRN's and attn_factor's magnitude once more at every shift (the
// cells that do not move too, rotated by 0); that compounds and is not a
// rotation, so weft does not copy it.
func (r RoPE) ShiftCosSin(delta int32, out []float32) []float32 {
	return r.cosSin(delta, 1, out)
}

func (r RoPE) cosSin(pos int32, mscale float32, out []float32) []float32 {
	thetaScale := powf(r.Base, -2/float32(r.Dims))
	theta := float32(pos)
	for i := 0; i < r.Dims/2; i++ {
		extrap := theta
		if r.Factors != nil {
			extrap = theta / r.Factors[i]
		}
		angle := r.FreqScale * extrap
		if r.ExtFactor != 0 {
			mix := yarnRamp(r.CorrDims[0], r.CorrDims[1], 2*i) * r.ExtFactor
			angle = float32(angle*(1-mix)) + float32(extrap*mix)
		}
		out[2*i] = cosf(angle) * mscale
		out[2*i+1] = sinf(angle) * mscale
		theta *= thetaScale
	}
	return out
}

// yarnRamp is rope_yarn_ramp: 1 for the pairs below low (fast rotations,
// extrapolated), 0 above high (interpolated), linear between. i0/2 is an
// integer division, as in ggml.
func yarnRamp(low, high float32, i0 int) float32 {
	y := (float32(i0/2) - low) / max(0.001, high-low)
	return 1 - min(1, max(0, y))
}

// YaRNCorrDims is ggml_rope_yarn_corr_dims: the range of rotated pairs
// whose wavelength falls between betaFast and betaSlow rotations over
// the training context nCtxOrig, floored and ceiled to whole dimensions
// and clamped to [0, dims-1].
func YaRNCorrDims(dims, nCtxOrig int, base, betaFast, betaSlow float32) [2]float32 {
	corrDim := func(nRot float32) float32 {
		return float32(dims) * logf(float32(nCtxOrig)/(nRot*2*float32(math.Pi))) / (2 * logf(base))
	}
	start := float32(math.Floor(float64(corrDim(betaFast))))
	end := float32(math.Ceil(float64(corrDim(betaSlow))))
	return [2]float32{max(0, start), min(float32(dims-1), end)}
}

// powf and logf stand in for libm's float32 functions: evaluated in
// float64 and rounded once, so correctly rounded in all but rare ties
// (cosf and sinf are glibc's own algorithm: trig.go).
func powf(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }
func logf(x float32) float32    { return float32(math.Log(float64(x))) }
