package ref

import "math"

// sinf and cosf give the bits of glibc's float32 sine and cosine (2.28
// and later: the double-precision polynomials from Arm's optimized
// routines) as its x86-64 build runs them on processors with FMA, where
// every a + b·c of the algorithm is one fused multiply-add. ggml's RoPE
// takes its angles' cos and sin from libm, and glibc's are not correctly
// rounded (about 2.7% of RoPE's angles round the other way), so a
// correctly rounded stand-in moves rotated keys and queries by an ulp:
// enough to change llama.cpp's logits in their last bits.
//
// The algorithm, in outline: |x| < 0.75 (by the top 12 bits, as glibc
// compares) goes straight to the polynomials; |x| < 120 is reduced by one
// fused multiply-subtract of a multiple of π/2; larger values by a
// fixed-point product with 192 bits of 2/π. The remainder r in [-π/4,
// π/4] then takes an odd polynomial r + r³·(s1 + r²·(s2 + r²·s3))-like
// form for the sine and an even one for the cosine, in double precision,
// rounded once to float32.

// sinf is glibc's sinf (see above).
func sinf(y float32) float32 {
	x := float64(y)
	top := abstop12(y)
	switch {
	case top < abstop12(0.75): // glibc: abstop12(pio4) rounds to 0.75's top bits
		if top < abstop12(0x1p-12) {
			return y
		}
		return trigPoly(x, x*x, &trigTab[0], 0)
	case top < abstop12(120):
		r, n := reduceFast(x)
		p := &trigTab[(n>>1)&1]
		r *= quadrantSign[n&3]
		return trigPoly(r, r*r, p, n)
	case top < abstop12(float32(math.Inf(1))):
		r, n := reduceLarge(math.Float32bits(y))
		q := n + int(math.Float32bits(y)>>31)
		r *= quadrantSign[q&3]
		return trigPoly(r, r*r, &trigTab[(q>>1)&1], n)
	}
	return invalid(y)
}

// cosf is glibc's cosf (see sinf): the same reduction, the quadrant
// moved by one.
func cosf(y float32) float32 {
	x := float64(y)
	top := abstop12(y)
	switch {
	case top < abstop12(0.75):
		if top < abstop12(0x1p-12) {
			return 1
		}
		return trigPoly(x, x*x, &trigTab[0], 1)
	case top < abstop12(120):
		r, n := reduceFast(x)
		p := &trigTab[(n>>1)&1]
		r *= quadrantSign[n&3]
		return trigPoly(r, r*r, p, n^1)
	case top < abstop12(float32(math.Inf(1))):
		r, n := reduceLarge(math.Float32bits(y))
		q := n + int(math.Float32bits(y)>>31)
		r *= quadrantSign[q&3]
		return trigPoly(r, r*r, &trigTab[(q>>1)&1], n^1)
	}
	return invalid(y)
}

// invalid is glibc's result for ±∞ and NaN: (y-y)/(y-y), the
// processor's default NaN for an infinity, a quiet y for a NaN.
func invalid(y float32) float32 { return (y - y) / (y - y) }

// abstop12 is the exponent and top three mantissa bits of |x|: glibc's
// range tests compare these, not the values.
func abstop12(x float32) uint32 { return math.Float32bits(x) >> 20 & 0x7ff }

// trigCoeffs are the polynomial coefficients: c0…c4 of the cosine in
// r², s1…s3 of the sine's r³ term onwards.
type trigCoeffs struct{ c0, c1, c2, c3, c4, s1, s2, s3 float64 }

// trigTab is glibc's __sincosf_table: the second entry has the cosine
// negated, for quadrants 2 and 3.
var trigTab = [2]trigCoeffs{
	{1, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{-1, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// quadrantSign is the sine's sign in quadrants 0…3.
var quadrantSign = [4]float64{1, -1, -1, 1}

// trigPoly evaluates the sine polynomial at x (x2 = x²) for even n, the
// cosine polynomial for odd n, with glibc's grouping and one FMA per
// a + b·c.
func trigPoly(x, x2 float64, p *trigCoeffs, n int) float32 {
	if n&1 == 0 {
		x3 := x * x2
		s1 := math.FMA(x2, p.s3, p.s2)
		x7 := x3 * x2
		s := math.FMA(x3, p.s1, x)
		return float32(math.FMA(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := math.FMA(x2, p.c4, p.c3)
	c1 := math.FMA(x2, p.c1, p.c0)
	x6 := x4 * x2
	c := math.FMA(x4, p.c2, c1)
	return float32(math.FMA(x6, c2, c))
}

// reduceFast returns x minus the nearest multiple n of π/2, and n, for
// |x| < 120: 2/π is scaled by 2²⁴ so that truncating the product and
// adding half a unit rounds to the nearest quadrant for negative x too.
func reduceFast(x float64) (float64, int) {
	const hpiInv, hpi = 0x1.45f306dc9c883p+23, 0x1.921fb54442d18p0
	n := (int32(x*hpiInv) + 0x800000) >> 24
	return math.FMA(-float64(n), hpi, x), int(n)
}

// reduceLarge reduces |x| (its bits xi; the sign is the caller's) by
// multiples of π/2 in fixed point: the 24-bit mantissa, shifted by the
// low exponent bits, times the 96 bits of 2/π that matter at this
// exponent gives the quadrant in the top 2 bits and the remainder in the
// other 62, exactly.
func reduceLarge(xi uint32) (float64, int) {
	const pi63 = 0x1.921fb54442d18p-62 // 2π·2⁻⁶⁴
	arr := invPiO4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0]) // the low 32 bits only, as in C
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * pi63, int(n)
}

// twoOverPi holds the first 192 fraction bits of 2/π.
var twoOverPi = [6]uint32{0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041}

// invPiO4 is glibc's __inv_pio4: entry i is bits 8i-24 … 8i+7 of 2/π's
// fraction (the leading ones zero), 8 new bits per entry so that any
// exponent finds its 96 bits at a whole entry.
var invPiO4 = func() (t [24]uint32) {
	bit := func(k int) uint32 { // fraction bit k of 2/π, k from 0
		if k < 0 {
			return 0
		}
		return twoOverPi[k/32] >> (31 - k%32) & 1
	}
	for i := range t {
		for k := 8*i - 24; k < 8*i+8; k++ {
			t[i] = t[i]<<1 | bit(k)
		}
	}
	return t
}()
