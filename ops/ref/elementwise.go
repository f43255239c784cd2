package ref

import "math"

// Mul sets dst[i] = a[i]·b[i mod len(b)]: elementwise when the lengths
// match, b broadcast over the rows of a when len(b) divides len(a) (the
// norm-weight case). len(dst) >= len(a); dst may alias a or b.
func Mul(dst, a, b []float32) {
	if len(b) == 0 {
		return
	}
	for r := 0; r < len(a); r += len(b) {
		row, out := a[r:r+len(b)], dst[r:r+len(b)]
		for i, v := range row {
			out[i] = v * b[i]
		}
	}
}

// Add sets dst[i] = a[i]+b[i mod len(b)], with the preconditions of Mul.
func Add(dst, a, b []float32) {
	if len(b) == 0 {
		return
	}
	for r := 0; r < len(a); r += len(b) {
		row, out := a[r:r+len(b)], dst[r:r+len(b)]
		for i, v := range row {
			out[i] = v + b[i]
		}
	}
}

// Scale sets dst[i] = x[i]·s. len(dst) >= len(x); dst may alias x.
func Scale(dst, x []float32, s float32) {
	for i, v := range x {
		dst[i] = v * s
	}
}

// SiLU sets dst[i] = x[i]/(1+exp(-x[i])) as ggml_vec_silu_f32 does: whole
// groups of 16 from the start of x use ggml's vectorised exp, the remainder
// libm's expf. ggml applies it row by row, so for bit-exact results pass one
// row at a time when the row length is not a multiple of 16.
func SiLU(dst, x []float32) {
	vec := len(x) &^ (lanes - 1)
	for i := 0; i < vec; i++ {
		dst[i] = x[i] / (1 + expApprox(-x[i]))
	}
	for i := vec; i < len(x); i++ {
		dst[i] = x[i] / (1 + expf(-x[i]))
	}
}

// SwiGLU sets dst[i] = silu(gate[i])·up[i], ggml_silu followed by ggml_mul,
// with SiLU's grouping. dst may alias gate or up.
func SwiGLU(dst, gate, up []float32) {
	SiLU(dst[:len(gate)], gate)
	Mul(dst, dst[:len(gate)], up[:len(gate)])
}

// GELU is ggml's tanh-approximated GELU in its default CPU build
// (GGML_GELU_FP16): 0 at or below -10, identity at or above 10, and in
// between the value of a binary16 lookup table indexed by x rounded to
// binary16 (GELUTableEntry, computed here on demand).
func GELU(dst, x []float32) {
	for i, v := range x {
		switch {
		case v <= -10:
			dst[i] = 0
		case v >= 10:
			dst[i] = v
		default:
			dst[i] = GELUTableEntry(floatToHalf(v))
		}
	}
}

// GELUTableEntry is entry h of ggml's ggml_table_gelu_f16, widened to
// float32: the tanh GELU of the binary16 value h, rounded to binary16.
// Fast kernels tabulate it.
func GELUTableEntry(h uint16) float32 { return roundHalf(geluTanh(halfToFloat(h))) }

const (
	geluCoefA     = 0.044715
	geluSqrt2OvPi = 0.79788456080286535587989211986876
)

// geluTanh is ggml_gelu_f32, evaluated in float32 in ggml's operand order
// with every product rounded (the conversions keep a compiler from fusing
// a multiply and an add).
func geluTanh(x float32) float32 {
	x3 := float32(float32(float32(geluCoefA)*x) * x)
	inner := float32(float32(geluSqrt2OvPi)*x) * float32(1+x3)
	return float32(0.5*x) * float32(1+float32(math.Tanh(float64(inner))))
}
