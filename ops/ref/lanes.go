package ref

import "math"

// lanes is the width of one AVX-512 register in float32 elements. ggml's
// vector loops on the reference machine work in groups of this many, and the
// order in which they sum decides the last bits of every result.
const lanes = 16

// fma32 is a float32 fused multiply-add, a*b+c with a single rounding, as
// _mm512_fmadd_ps computes it. The product of two float32 values is exact in
// float64, so the float64 sum is rounded once; rounding it again to float32
// goes wrong only when that sum lies exactly halfway between two float32
// values (low 29 bits 1000…0) while the exact sum does not: fmaTie.
func fma32(a, b, c float32) float32 {
	s := float64(a)*float64(b) + float64(c)
	if math.Float64bits(s)<<35 == 1<<63 {
		return fmaTie(a, b, c)
	}
	return float32(s)
}

// fmaLanes is acc[j] = fma32(a[j], b[j], acc[j]) for one register of lanes,
// written out so that the common case needs no call.
func fmaLanes(acc *[lanes]float32, a, b []float32) {
	a, b = a[:lanes], b[:lanes]
	for j := range acc {
		s := float64(a[j])*float64(b[j]) + float64(acc[j])
		if math.Float64bits(s)<<35 == 1<<63 {
			acc[j] = fmaTie(a[j], b[j], acc[j])
			continue
		}
		acc[j] = float32(s)
	}
}

// fmaTie rounds a*b+c to float32 when their float64 sum sits on a float32
// midpoint: the exact remainder of the addition moves it one float64 step
// toward the exact value, or leaves it for a true tie.
func fmaTie(a, b, c float32) float32 {
	p, q := float64(a)*float64(b), float64(c)
	s := p + q
	t := s - p
	rem := (p - (s - t)) + (q - t)
	bits := math.Float64bits(s)
	switch {
	case rem*s > 0:
		bits++
	case rem != 0:
		bits--
	}
	return float32(math.Float64frombits(bits))
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
