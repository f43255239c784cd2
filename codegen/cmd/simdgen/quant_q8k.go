package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var (
	cNeg127 = ConstData("fneg127", F32(-127))
	c127i   = ConstData("i127", U32(127))
)

// genQuantQ8_K emits quantQ8_KAVX2(nb int, src *float32, dst *byte) bool,
// bit-identical to quant.QuantizeRow(TypeQ8_K): the first element of
// largest magnitude sets iscale = −127/max, q = min(127, rne(iscale·x)),
// d = 1/iscale, and sixteen int16 sums of 16 levels follow the levels. A
// block that is all zero or holds a NaN or infinity makes it return false
// (the caller then uses the reference), like quantQ8_0AVX2.
func genQuantQ8_K(reg *registry) {
	name := "quantQ8_KAVX2"
	TEXT(name, NOSPLIT, "func(nb int, src *float32, dst *byte) bool")
	Doc(name + " quantizes nb blocks of 256 float32 to Q8_K; false means use the reference.")
	nb := Load(Param("nb"), GP64())
	src := Load(Param("src"), GP64())
	dst := Load(Param("dst"), GP64())
	absMask := YMM()
	VPBROADCASTD(cAbsMask, absMask)
	order := YMM()
	VMOVDQU(cPackOrder, order)
	loopBlocks(nb, func() {
		m := q8kAbsMax(src, absMask)
		bits := GP32()
		VMOVD(m, bits)
		TESTL(bits, bits)
		JZ(LabelRef("fail"))
		CMPL(bits, U32(0x7f800000))
		JAE(LabelRef("fail"))
		iscale := q8kScale(src, dst, m, absMask)
		is := YMM()
		VBROADCASTSS(iscale, is)
		for c := 0; c < 4; c++ {
			q8kChunk(src, dst, c, is, order)
		}
		ADDQ(U32(4*256), src)
		ADDQ(U32(q8kBytes), dst)
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
		reg.quant(v, "TypeQ8_K", name, 256)
	}
}

// q8kAbsMax returns the bits of max |x| over the 256 floats at src in lane
// 0 of an xmm, broadcast to all four lanes.
func q8kAbsMax(src Register, absMask VecVirtual) VecVirtual {
	m := zeroed(1)[0]
	for i := 0; i < 32; i++ {
		t := YMM()
		VPAND(Mem{Base: src, Disp: 32 * i}, absMask, t)
		VPMAXUD(t, m, m)
	}
	x := XMM()
	VEXTRACTI128(U8(1), m, x)
	VPMAXUD(m.AsX(), x, x)
	t := XMM()
	VPSHUFD(U8(0x4e), x, t)
	VPMAXUD(t, x, x)
	VPSHUFD(U8(0xb1), x, t)
	VPMAXUD(t, x, x)
	return x
}

// q8kScale finds the first element whose magnitude is the maximum m, stores
// d = 1/iscale at dst and returns iscale = −127/that element.
func q8kScale(src, dst Register, m, absMask VecVirtual) VecVirtual {
	target := YMM()
	VPBROADCASTD(m, target)
	off, mask := GP64(), GP32()
	XORQ(off, off)
	Label("find")
	t := YMM()
	VPAND(Mem{Base: src, Index: off, Scale: 1}, absMask, t)
	VPCMPEQD(target, t, t)
	VMOVMSKPS(t, mask)
	TESTL(mask, mask)
	JNZ(LabelRef("found"))
	ADDQ(U32(32), off)
	JMP(LabelRef("find"))
	Label("found")
	BSFL(mask, mask)
	ADDQ(src, off)
	maxv := XMM()
	VMOVSS(Mem{Base: off, Index: mask.As64(), Scale: 4}, maxv)
	iscale, num := XMM(), XMM()
	VMOVSS(cNeg127, num)
	VDIVSS(maxv, num, iscale)
	d := XMM()
	VMOVSS(cOne, d)
	VDIVSS(iscale, d, d)
	VMOVSS(d, Mem{Base: dst})
	return iscale
}

// q8kChunk quantizes elements 64c…64c+63 and stores their levels and the
// four 16-element sums.
func q8kChunk(src, dst Register, c int, is, order VecVirtual) {
	lim := YMM()
	VPBROADCASTD(c127i, lim)
	q := make([]VecVirtual, 8)
	for i := range q {
		q[i] = YMM()
		VMULPS(Mem{Base: src, Disp: 4 * (64*c + 8*i)}, is, q[i])
		VCVTPS2DQ(q[i], q[i])
		VPMINSD(lim, q[i], q[i])
	}
	sums := groupSums(q)
	VPACKSSDW(sums, sums, sums)
	VMOVQ(sums, Mem{Base: dst, Disp: q8kSums + 8*c})
	packBytes(q[:4], order, Mem{Base: dst, Disp: q8kQs + 64*c})
	packBytes(q[4:], order, Mem{Base: dst, Disp: q8kQs + 64*c + 32})
}

// groupSums returns in an xmm the int32 sums of q[0]+q[1], q[2]+q[3], …:
// four groups of sixteen levels, without changing q.
func groupSums(q []VecVirtual) VecVirtual {
	s := make([]VecVirtual, 4)
	for g := range s {
		s[g] = YMM()
		VPADDD(q[2*g+1], q[2*g], s[g])
	}
	VPHADDD(s[1], s[0], s[0])
	VPHADDD(s[3], s[2], s[2])
	VPHADDD(s[2], s[0], s[0])
	x := XMM()
	VEXTRACTI128(U8(1), s[0], x)
	VPADDD(s[0].AsX(), x, x)
	return x
}
