package quant

import (
	"math"

	"github.com/weft-ml/weft/gguf"
)

// The synth-15m files were quantized from F32 master weights; the F16 file
// holds those weights rounded to binary16. A block quantized from the F16
// values must therefore equal llama.cpp's bytes unless some value in the
// rounding interval of its inputs would change a decision (the f16 scale or
// one level). symmetricBlockAmbiguous finds such blocks by interval
// arithmetic, so every other block proves the quantizer byte for byte.

// legacyRule describes the symmetric legacy quantizers: d = M/div with M the
// signed (or absolute) maximum, level = q(x/d).
type legacyRule struct {
	div    float64
	signed bool                  // scale from the signed max (Q4_0, Q5_0) or |max| (Q8_0)
	level  func(v float64) int64 // level for x/d
}

var legacyRules = map[gguf.TensorType]legacyRule{
	gguf.TypeQ8_0: {127, false, func(v float64) int64 { return int64(math.Round(v)) }},
	gguf.TypeQ4_0: {-8, true, func(v float64) int64 { return min(15, int64(math.Floor(v+8.5))) }},
	gguf.TypeQ5_0: {-16, true, func(v float64) int64 { return min(31, int64(math.Floor(v+16.5))) }},
}

// halfULP16 is half the spacing of binary16 values around x (which is one).
func halfULP16(x float32) float64 {
	a := math.Abs(float64(x))
	if a < 1.0/(1<<14) {
		return 1.0 / (1 << 25)
	}
	_, e := math.Frexp(a) // a = f·2^e with f in [0.5, 1)
	return math.Ldexp(1, e-1-10) / 2
}

// symmetricBlockAmbiguous reports whether the f16 scale, and which levels,
// some F32 weights that round to x could quantize differently.
func symmetricBlockAmbiguous(r legacyRule, x []float32) (scale bool, level []bool) {
	const slack = 1e-6 // covers float32 rounding inside the C code
	level = make([]bool, len(x))
	m := 0
	for j := range x {
		if abs32(x[j]) > abs32(x[m]) {
			m = j
		}
	}
	sign := 1.0
	if r.signed && x[m] < 0 {
		sign = -1
	}
	lo, hi := 0.0, 0.0
	for j, v := range x {
		a, h := math.Abs(float64(v)), halfULP16(v)
		if r.signed && j != m && (v < 0) != (sign < 0) && a+h >= math.Abs(float64(x[m]))-halfULP16(x[m]) {
			scale = true // the true maximum might have the other sign (then d's sign differs)
		}
		lo, hi = max(lo, a-h), max(hi, a+h)
	}
	scale = scale || FP32ToFP16(float32(sign*lo/r.div)) != FP32ToFP16(float32(sign*hi/r.div))
	for j, v := range x {
		h := halfULP16(v)
		vmin, vmax := math.Inf(1), math.Inf(-1)
		for _, xv := range []float64{float64(v) - h, float64(v) + h} {
			for _, mv := range []float64{sign * lo, sign * hi} {
				vmin, vmax = min(vmin, xv*r.div/mv), max(vmax, xv*r.div/mv)
			}
		}
		level[j] = r.level(vmin-slack) != r.level(vmax+slack)
	}
	return scale, level
}
