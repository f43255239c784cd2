package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Kernels built on ggml's vectorised exponential (ggml_v_expf, AVX-512
// form), operation for operation as ops/ref's expApprox models it, so the
// results are bit-identical to the pure-Go reference: every step is one
// IEEE operation with one rounding (FMA, subtract, multiply, VSCALEFPS),
// and the out-of-range lanes are patched as ggml patches them.

// expConsts holds the broadcast constants of the exponential.
type expConsts struct {
	shift, log2e, ln2Hi, ln2Lo, c1, c2, c3, c4, c5, one, big, negBig, inf VecVirtual
}

// The constants live in memory once; each kernel broadcasts them.
var (
	cExpShift  = ConstData("expShift", F32(0x1.8p23))
	cExpLog2e  = ConstData("expLog2e", F32(0x1.715476p+0))
	cExpLn2Hi  = ConstData("expLn2Hi", F32(0x1.62e4p-1))
	cExpLn2Lo  = ConstData("expLn2Lo", F32(0x1.7f7d1cp-20))
	cExpC1     = ConstData("expC1", F32(0x1.ffffecp-1))
	cExpC2     = ConstData("expC2", F32(0x1.fffdb6p-2))
	cExpC3     = ConstData("expC3", F32(0x1.555e66p-3))
	cExpC4     = ConstData("expC4", F32(0x1.573e2ep-5))
	cExpC5     = ConstData("expC5", F32(0x1.0e4020p-7))
	cExpBig    = ConstData("expBig", F32(192))
	cExpNegBig = ConstData("expNegBig", F32(-192))
	cExpInf    = ConstData("expInf", U32(0x7f800000)) // +Inf
)

func loadExpConsts() expConsts {
	b := func(m Mem) VecVirtual {
		z := ZMM()
		VBROADCASTSS(m, z)
		return z
	}
	return expConsts{
		shift: b(cExpShift), log2e: b(cExpLog2e), ln2Hi: b(cExpLn2Hi), ln2Lo: b(cExpLn2Lo),
		c1: b(cExpC1), c2: b(cExpC2), c3: b(cExpC3), c4: b(cExpC4), c5: b(cExpC5),
		one: b(cOne), big: b(cExpBig), negBig: b(cExpNegBig), inf: b(cExpInf),
	}
}

// expZMM returns exp(x) for the 16 lanes of x (x is left unchanged).
func expZMM(c expConsts, x VecVirtual) VecVirtual {
	z := ZMM()
	VMOVAPS(c.shift, z)
	VFMADD231PS(c.log2e, x, z) // z = x·log2e + shift
	n := ZMM()
	VSUBPS(c.shift, z, n) // n = round(x·log2e)
	b := ZMM()
	VMOVAPS(x, b)
	VFNMADD231PS(c.ln2Hi, n, b) // b = x − n·ln2hi
	VFNMADD231PS(c.ln2Lo, n, b) // b −= n·ln2lo
	u := ZMM()
	VMULPS(b, b, u)
	p := ZMM()
	VMOVAPS(c.c4, p)
	VFMADD231PS(c.c5, b, p) // c5·b + c4
	q := ZMM()
	VMOVAPS(c.c2, q)
	VFMADD231PS(c.c3, b, q) // c3·b + c2
	VFMADD231PS(p, u, q)    // hi = p·u + q
	j := ZMM()
	VMOVAPS(c.one, j)
	VFMADD231PS(c.c1, b, j) // c1·b + 1
	VFMADD231PS(q, u, j)    // j = hi·u + c1·b + 1
	res := ZMM()
	VSCALEFPS(n, j, res) // j·2ⁿ, rounded once
	over, under := K(), K()
	VCMPPS(U8(0x1e), c.big, n, over)     // n > 192 (ordered: NaN stays NaN)
	VCMPPS(U8(0x11), c.negBig, n, under) // n < −192
	VMOVAPS(c.inf, over, res)
	VXORPS(res, res, under, res)
	return res
}

// genExpKernels emits the SiLU and softmax kernels for AVX-512.
func genExpKernels(v variant, reg *registry) {
	if !v.vnni {
		return
	}
	silu := genSiLU()
	softmax := genSoftmaxExp()
	reg.elem(v, silu, softmax)
}

// genSiLU emits siluAVX512(ng int, x, dst *float32): dst = x/(1+exp(−x))
// for ng groups of 16, as ggml_v_silu computes it (−x as 0 − x).
func genSiLU() string {
	name := "siluAVX512"
	TEXT(name, NOSPLIT, "func(ng int, x *float32, dst *float32)")
	Doc(name+" sets dst[i] = x[i]/(1+exp(−x[i])) for ng groups of 16 floats,",
		"bit-identical to ops/ref.SiLU on whole groups.")
	ng := Load(Param("ng"), GP64())
	x := Load(Param("x"), GP64())
	dst := Load(Param("dst"), GP64())
	c := loadExpConsts()
	zero := ZMM()
	VXORPS(zero, zero, zero)
	loopBlocks(ng, func() {
		v := ZMM()
		VMOVUPS(Mem{Base: x}, v)
		neg := ZMM()
		VSUBPS(v, zero, neg)
		e := expZMM(c, neg)
		VADDPS(c.one, e, e)
		VDIVPS(e, v, v)
		VMOVUPS(v, Mem{Base: dst})
		ADDQ(U32(64), x)
		ADDQ(U32(64), dst)
	})
	VZEROUPPER()
	RET()
	return name
}

// genSoftmaxExp emits softmaxExpAVX512(ng int, row *float32, maxv float32)
// float64: row[i] = exp(row[i] − maxv) over ng groups of 16, returning the
// float64 sum of the groups' float32 sums, each reduced in the order of
// _mm512_reduce_add_ps (halves folded 8, 4, 2, 1), as ops/ref does.
func genSoftmaxExp() string {
	name := "softmaxExpAVX512"
	TEXT(name, NOSPLIT, "func(ng int, row *float32, maxv float32) float64")
	Doc(name+" replaces ng groups of 16 floats x at row with exp(x − maxv) and",
		"returns the float64 sum of each group's float32 sum, as ops/ref does.")
	ng := Load(Param("ng"), GP64())
	row := Load(Param("row"), GP64())
	m := ZMM()
	VBROADCASTSS(Load(Param("maxv"), XMM()), m)
	c := loadExpConsts()
	sum := XMM()
	VXORPD(sum, sum, sum)
	loopBlocks(ng, func() {
		v := ZMM()
		VMOVUPS(Mem{Base: row}, v)
		VSUBPS(m, v, v)
		e := expZMM(c, v)
		VMOVUPS(e, Mem{Base: row})
		s := reduceAddZMM(e)
		VCVTSS2SD(s, s, s)
		VADDSD(s, sum, sum)
		ADDQ(U32(64), row)
	})
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
	return name
}

// reduceAddZMM sums the 16 lanes of v into lane 0 of the result in the
// order of _mm512_reduce_add_ps: i + i+8, then + i+4, + i+2, + i+1. It uses
// EVEX forms only, as v may live in a register above 15.
func reduceAddZMM(v VecVirtual) VecVirtual {
	h := YMM()
	VEXTRACTF64X4(U8(1), v, h)
	VADDPS(v.AsY(), h, h)
	q := XMM()
	VEXTRACTF32X4(U8(1), h, q)
	VADDPS(h.AsX(), q, q)
	t := XMM()
	VMOVHLPS(q, q, t)
	VADDPS(t, q, q)
	VMOVSHDUP(q, t)
	VADDSS(t, q, q)
	return q
}

// genBinaryKernels emits dst = a op b (element-wise, float32) for MULPS
// and ADDPS: one IEEE operation per element, so trivially bit-identical
// to ops/ref.Mul and ops/ref.Add.
func genBinaryKernels(v variant, reg *registry) {
	lanes := 8
	if v.vnni {
		lanes = 16
	}
	mul := genBinary(v, "mulF32", lanes, func(a, b, d VecVirtual) { VMULPS(b, a, d) })
	add := genBinary(v, "addF32", lanes, func(a, b, d VecVirtual) { VADDPS(b, a, d) })
	reg.binary(v, mul, add, lanes)
}

func genBinary(v variant, base string, lanes int, op func(a, b, d VecVirtual)) string {
	name := fname(base, v)
	TEXT(name, NOSPLIT, "func(nc int, dst *float32, a *float32, b *float32)")
	Doc(name+fmt.Sprintf(" applies its operation to nc chunks of %d floats: dst = a op b.", lanes))
	nc := Load(Param("nc"), GP64())
	dst := Load(Param("dst"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	vec := func() VecVirtual {
		if lanes == 16 {
			return ZMM()
		}
		return YMM()
	}
	loopBlocks(nc, func() {
		x, y := vec(), vec()
		VMOVUPS(Mem{Base: a}, x)
		VMOVUPS(Mem{Base: b}, y)
		op(x, y, x)
		VMOVUPS(x, Mem{Base: dst})
		for _, p := range []Register{dst, a, b} {
			ADDQ(U32(4*lanes), p)
		}
	})
	VZEROUPPER()
	RET()
	return name
}

var cNegInf = ConstData("negInf", U32(0xff800000)) // −Inf

// genSoftmaxSteps emits softmax's scale-and-max and rescale loops for
// chunks of lanes floats (ymm for AVX2, zmm for AVX-512).
func genSoftmaxSteps(v variant, reg *registry) {
	lanes := 8
	if v.vnni {
		lanes = 16
	}
	vec := func() VecVirtual {
		if lanes == 16 {
			return ZMM()
		}
		return YMM()
	}
	scaleMax := fname("scaleMax", v)
	TEXT(scaleMax, NOSPLIT, "func(nc int, row *float32, scale float32) (maxv float32, nan bool)")
	Doc(scaleMax+fmt.Sprintf(" multiplies nc chunks of %d floats at row by scale and returns", lanes),
		"their largest value and whether any was NaN.")
	nc := Load(Param("nc"), GP64())
	row := Load(Param("row"), GP64())
	sc, m, bad := vec(), vec(), vec()
	VBROADCASTSS(Load(Param("scale"), XMM()), sc)
	VBROADCASTSS(cNegInf, m)
	VXORPS(bad, bad, bad)
	loopBlocks(nc, func() {
		x := vec()
		VMULPS(Mem{Base: row}, sc, x)
		VMOVUPS(x, Mem{Base: row})
		VMAXPS(x, m, m)
		if lanes == 16 {
			k := K()
			VCMPPS(U8(3), x, x, k) // unordered: NaN
			ones := ZMM()
			VPTERNLOGD(U8(0xff), ones, ones, ones)
			VMOVDQA32(ones, k, bad)
		} else {
			u := YMM()
			VCMPPS(U8(3), x, x, u)
			VORPS(u, bad, bad)
		}
		ADDQ(U32(4*lanes), row)
	})
	mx := m
	if lanes == 16 {
		y := YMM()
		VEXTRACTF64X4(U8(1), m, y)
		VMAXPS(m.AsY(), y, y)
		ybad := YMM()
		VEXTRACTF64X4(U8(1), bad, ybad)
		VORPS(bad.AsY(), ybad, ybad)
		mx, bad = y, ybad
	}
	x := XMM()
	VEXTRACTF128(U8(1), mx, x)
	VMAXPS(mx.AsX(), x, x)
	t := XMM()
	VMOVHLPS(x, x, t)
	VMAXPS(t, x, x)
	VMOVSHDUP(x, t)
	VMAXSS(t, x, x)
	Store(x, ReturnIndex(0))
	mask := GP32()
	VMOVMSKPS(bad, mask)
	TESTL(mask, mask)
	nan := GP8()
	SETNE(nan)
	Store(nan, ReturnIndex(1))
	VZEROUPPER()
	RET()

	scale := fname("scaleF32", v)
	TEXT(scale, NOSPLIT, "func(nc int, row *float32, s float32)")
	Doc(scale + fmt.Sprintf(" multiplies nc chunks of %d floats at row by s.", lanes))
	nc = Load(Param("nc"), GP64())
	row = Load(Param("row"), GP64())
	sv := vec()
	VBROADCASTSS(Load(Param("s"), XMM()), sv)
	loopBlocks(nc, func() {
		x := vec()
		VMULPS(Mem{Base: row}, sv, x)
		VMOVUPS(x, Mem{Base: row})
		ADDQ(U32(4*lanes), row)
	})
	VZEROUPPER()
	RET()
	reg.softmaxSteps(v, scaleMax, scale)
}
