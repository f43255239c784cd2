package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genQuantQ8_0 emits quantQ8_0<ISA>(nb int, src *float32, dst *byte) bool,
// which quantizes nb blocks of 32 floats to Q8_0 exactly like
// quant.QuantizeRow: d = max|x|/127 stored as binary16, q = roundf(x/d)
// (half away from zero). The block maximum is taken on the integer bits of
// |x|, which orders like the floats and is exact. It returns false, having
// written an unspecified prefix, when a block holds a NaN or infinity or
// 1/d overflows; the caller then uses the reference quantizer.
// AVX-512 adds nothing here that matters, so every variant shares it.
func genQuantQ8_0(reg *registry) {
	name := "quantQ8_0AVX2"
	TEXT(name, NOSPLIT, "func(nb int, src *float32, dst *byte) bool")
	Doc(name + " quantizes nb blocks of 32 float32 to Q8_0; false means use the reference.")
	nb := Load(Param("nb"), GP64())
	src := Load(Param("src"), GP64())
	dst := Load(Param("dst"), GP64())
	absMask, signMask, half := YMM(), YMM(), YMM()
	VPBROADCASTD(cAbsMask, absMask)
	VPBROADCASTD(cSignMask, signMask)
	VPBROADCASTD(cHalfDown, half)
	order := YMM()
	VMOVDQU(cPackOrder, order)

	loopBlocks(nb, func() {
		x := make([]VecVirtual, 4)
		for i := range x {
			x[i] = YMM()
			VMOVUPS(Mem{Base: src, Disp: 32 * i}, x[i])
		}
		m := blockAbsMax(x, absMask)
		bits := GP32()
		VMOVD(m, bits)
		CMPL(bits, U32(0x7f800000))
		JAE(LabelRef("fail"))
		id := scaleQ8(m, dst)
		VMOVD(id, bits)
		CMPL(bits, U32(0x7f800000))
		JAE(LabelRef("fail"))
		idv := YMM()
		VBROADCASTSS(id, idv)
		q := make([]VecVirtual, 4)
		for i := range x {
			q[i] = roundAway(x[i], idv, signMask, half)
		}
		packBytes(q, order, Mem{Base: dst, Disp: 2})
		ADDQ(U32(128), src)
		ADDQ(U32(34), dst)
	})
	VZEROUPPER()
	MOVB(U8(1), AL)
	Store(AL, ReturnIndex(0))
	RET()
	Label("fail")
	VZEROUPPER()
	MOVB(U8(0), AL)
	Store(AL, ReturnIndex(0))
	RET()
	for _, v := range variants {
		reg.quant(v, "TypeQ8_0", name, 32)
	}
}

// blockAbsMax returns max |x| over the four vectors, in lane 0 of an xmm.
func blockAbsMax(x []VecVirtual, absMask VecVirtual) VecVirtual {
	a := make([]VecVirtual, len(x))
	for i := range x {
		a[i] = YMM()
		VPAND(absMask, x[i], a[i])
	}
	VPMAXUD(a[1], a[0], a[0])
	VPMAXUD(a[3], a[2], a[2])
	VPMAXUD(a[2], a[0], a[0])
	m := XMM()
	VEXTRACTI128(U8(1), a[0], m)
	VPMAXUD(a[0].AsX(), m, m)
	t := XMM()
	VPSHUFD(U8(0x4e), m, t)
	VPMAXUD(t, m, m)
	VPSHUFD(U8(0xb1), m, t)
	VPMAXUD(t, m, m)
	return m
}

// scaleQ8 stores d = amax/127 as binary16 at dst and returns 1/d, or 0 when
// d is 0.
func scaleQ8(amax VecVirtual, dst Register) VecVirtual {
	d := XMM()
	VDIVSS(c127, amax, d)
	h := XMM()
	VCVTPS2PH(U8(0), d, h)
	VPEXTRW(U8(0), h, Mem{Base: dst})
	id, one := XMM(), XMM()
	VMOVSS(cOne, one)
	VDIVSS(d, one, id)
	nz, zero := XMM(), XMM()
	VXORPS(zero, zero, zero)
	VCMPSS(U8(4), zero, d, nz) // d != 0
	VANDPS(nz, id, id)
	return id
}

// roundAway returns int32 lanes of roundf(x·id): adding the largest float
// below ½ with x's sign and truncating rounds halves away from zero and
// everything else to nearest.
func roundAway(x, id, signMask, half VecVirtual) VecVirtual {
	p := YMM()
	VMULPS(id, x, p)
	s := YMM()
	VANDPS(signMask, p, s)
	VORPS(half, s, s)
	VADDPS(s, p, p)
	VCVTTPS2DQ(p, p)
	return p
}

// packBytes narrows four ymm of int32 (all within int8) to 32 bytes at m.
func packBytes(q []VecVirtual, order VecVirtual, m Mem) {
	VPACKSSDW(q[1], q[0], q[0])
	VPACKSSDW(q[3], q[2], q[2])
	VPACKSSWB(q[2], q[0], q[0])
	VPERMD(q[0], order, q[0])
	VMOVDQU(q[0], m)
}
