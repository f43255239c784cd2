package ref

import "math"

// lanes is the width of one AVX-512 register in float32 elements. ggml's
// vector loops on the reference machine work in groups of this many, and the
// order in which they sum decides the last bits of every result.
const lanes = 16

// fma32 is a float32 fused multiply-add, a*b+c with a single rounding, as
// _mm512_fmadd_ps computes it. The product of two float32 values is exact in
// float64; the sum is rounded once to float64 and then to float32. When the
// float64 sum lands exactly halfway between two float32 values the second
// rounding could go the wrong way, so that case is settled with the exact
// remainder of the addition.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	bits := math.Float64bits(s)
	if bits&(1<<29-1) == 1<<28 && bits&0x7ff0000000000000 > 0x3810000000000000 {
		t := s - p
		rem := (p - (s - t)) + (float64(c) - t)
		switch {
		case rem != 0 && (rem > 0) == (s > 0):
			bits++
		case rem != 0:
			bits--
		}
		s = math.Float64frombits(bits)
	}
	return float32(s)
}

// hsum adds 16 lanes in the order of _mm512_reduce_add_ps: upper half onto
// lower half three times, then the last pair.
func hsum(v *[lanes]float32) float32 {
	var h [8]float32
	for i := range h {
		h[i] = v[i] + v[i+8]
	}
	q0, q1 := h[0]+h[4], h[1]+h[5]
	q2, q3 := h[2]+h[6], h[3]+h[7]
	return (q0 + q2) + (q1 + q3)
}

// expf is the correctly rounded float32 exponential, standing in for libm's
// expf in ggml's scalar loop tails.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// Coefficients of ggml's vectorised expf (ggml_v_expf, from ARM's optimized
// routines): x = n·ln2 + b with n integral, exp(b) ≈ 1 + b·P(b).
const (
	expShift = 0x1.8p23
	expLog2e = 0x1.715476p+0
	expLn2Hi = 0x1.62e4p-1
	expLn2Lo = 0x1.7f7d1cp-20
	expC1    = 0x1.ffffecp-1
	expC2    = 0x1.fffdb6p-2
	expC3    = 0x1.555e66p-3
	expC4    = 0x1.573e2ep-5
	expC5    = 0x1.0e4020p-7
)

// expApprox mirrors the AVX-512 variant of ggml_v_expf for one lane: about
// 1.5 ulp from the true exponential, flushing to 0 below about -104 and to
// infinity above about 88.7.
func expApprox(x float32) float32 {
	z := fma32(x, expLog2e, expShift)
	n := z - expShift
	switch {
	case n > 192:
		return float32(math.Inf(1))
	case n < -192:
		return 0
	case n != n:
		return n
	}
	b := fma32(-n, expLn2Lo, fma32(-n, expLn2Hi, x))
	u := b * b
	hi := fma32(fma32(expC5, b, expC4), u, fma32(expC3, b, expC2))
	j := fma32(hi, u, fma32(expC1, b, 1))
	// _mm512_scalef_ps: j·2ⁿ rounded once (exact in float64 for this range).
	return float32(math.Ldexp(float64(j), int(n)))
}
