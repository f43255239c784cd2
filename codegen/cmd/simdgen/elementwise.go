package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Element-wise float32 kernels: one IEEE operation per element, so their
// results are those of the pure-Go loops in ops/ref.

// genBinaryKernels emits dst = a op b (element-wise, float32) for MULPS
// and ADDPS: one IEEE operation per element, so trivially bit-identical
// to ops/ref.Mul and ops/ref.Add.
func genBinaryKernels(v variant, reg *registry) {
	lanes := v.lanes()
	mul := genBinary(v, "mulF32", lanes, func(a, b, d VecVirtual) { VMULPS(b, a, d) })
	add := genBinary(v, "addF32", lanes, func(a, b, d VecVirtual) { VADDPS(b, a, d) })
	reg.binary(v, mul, add, lanes)
}

func genBinary(v variant, base string, lanes int, op func(a, b, d VecVirtual)) string {
	name := fname(base, v)
	TEXT(name, NOSPLIT, "func(nc int, dst *float32, a *float32, b *float32)")
	Doc(name + fmt.Sprintf(" applies its operation to nc chunks of %d floats: dst = a op b.", lanes))
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
	lanes, vec := v.lanes(), v.vec
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
	Store(foldXMM(x, maxPS, maxSS), ReturnIndex(0))
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
