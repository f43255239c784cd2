package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// IQ4_NL and IQ4_XS: 4-bit indices into a table of 16 signed levels. A
// VPSHUFB per 32 elements turns the unpacked nibbles into int8 levels,
// after which a block is a Q8_0-style signed block (see signedBlock). The
// IQ4_NL kernels are legacy-block kernels (genLegacy with iq4Block).

const iq4xsBytes = 136

// cIQ4Levels is the level table, kvalues_iq4nl of llama.cpp's
// ggml-quants.c (quant.IQ4Levels; the kernel tests check the two agree).
var cIQ4Levels = iq4Levels()

func iq4Levels() Mem {
	m := GLOBL("iq4Levels", RODATA|NOPTR)
	for i, v := range []int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113} {
		DATA(i, I8(v))
	}
	return m
}

// iq4xsConsts are the constants of the IQ4_XS scale decoding: VPSRLVD
// counts that bring sub-block k's four low bits (scales_l, shifted by 4k)
// and two high bits (scales_h, shifted by 2k, after a shift left by 4 that
// puts them at bits 4–5) to the bottom of dword k; masks for the two; the
// offset 32; and per pair p of sub-blocks the VPSHUFB control that spreads
// word 2p over the lower 128-bit half and word 2p+1 over the upper.
type iq4xsConsts struct {
	shiftLo, shiftHi, maskLo, maskHi, bias Mem
	pairSel                                [4]Mem
}

var cIQ4XS = iq4xsConstData()

func iq4xsConstData() iq4xsConsts {
	var c iq4xsConsts
	c.shiftLo = GLOBL("iq4xsShiftLo", RODATA|NOPTR)
	for k := 0; k < 8; k++ {
		DATA(4*k, U32(4*k))
	}
	c.shiftHi = GLOBL("iq4xsShiftHi", RODATA|NOPTR)
	for k := 0; k < 8; k++ {
		DATA(4*k, U32(2*k))
	}
	c.maskLo = ConstData("iq4xsMaskLo", U32(0x0f))
	c.maskHi = ConstData("iq4xsMaskHi", U32(0x30))
	c.bias = ConstData("iq4xsBias", U32(32))
	for p := range c.pairSel {
		c.pairSel[p] = GLOBL(fmt.Sprintf("iq4xsPair%d", p), RODATA|NOPTR)
		for i := 0; i < 32; i++ {
			word := 2 * p
			if i >= 16 {
				word++
			}
			DATA(i, U8(2*word+i%2))
		}
	}
	return c
}

// genDotIQ4XS emits the IQ4_XS·Q8_K dot product. Per super-block the eight
// sub-block sums, each times its 6-bit scale minus 32 (VPMADDWD), are
// added exactly in eight int32 lanes, then converted and multiplied by
// d_w·d_a once, as llama.cpp's AVX2 kernel does (quant.VecDot adds the
// lanes as integers first: only rounding differs). Two sub-blocks share a
// 32-byte load: the lower half of each register holds sub-block 2p, the
// upper half 2p+1, with the activations loaded to match. AVX2 instructions
// only, shared by every variant.
func genDotIQ4XS(v variant, reg *registry) {
	if v.vnni {
		reg.dot(v, "TypeIQ4_XS", "dotIQ4_XSAVX2", "", 256)
		return
	}
	name := fname("dotIQ4_XS", v)
	TEXT(name, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(name + " returns the dot product of nb IQ4_XS super-blocks at w with Q8_K blocks at a.")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	mask := broadcastByte(cLowNibble)
	table := YMM()
	VBROADCASTI128(cIQ4Levels, table)
	acc := zeroed(1)[0]
	loopBlocks(nb, func() {
		scales := iq4xsScales(w)
		sumi := zeroed(1)[0]
		for p := 0; p < 4; p++ {
			s := YMM()
			VPSHUFB(cIQ4XS.pairSel[p], scales, s)
			lo, hi := YMM(), YMM()
			VMOVDQU(Mem{Base: w, Disp: 8 + 32*p}, lo)
			VPSRLW(U8(4), lo, hi)
			VPAND(mask, lo, lo)
			VPAND(mask, hi, hi)
			for half, q := range []VecVirtual{lo, hi} {
				VPSHUFB(q, table, q)
				// A broadcast defines the whole register (a plain xmm load
				// would leave avo's liveness thinking the upper half live).
				ay := YMM()
				VBROADCASTI128(Mem{Base: a, Disp: q8kQs + 64*p + 16*half}, ay)
				VINSERTI128(U8(1), Mem{Base: a, Disp: q8kQs + 64*p + 32 + 16*half}, ay, ay)
				absw := YMM()
				VPSIGNB(q, q, absw)
				VPSIGNB(q, ay, ay)
				prod := YMM()
				VPMADDUBSW(ay, absw, prod)
				VPMADDWD(s, prod, prod)
				VPADDD(prod, sumi, sumi)
			}
		}
		f := YMM()
		VCVTDQ2PS(sumi, f)
		VFMADD231PS(superScale(Mem{Base: w}, a), f, acc)
		ADDQ(U32(iq4xsBytes), w)
		ADDQ(U32(q8kBytes), a)
	})
	finishDot(acc)
	reg.dot(v, "TypeIQ4_XS", name, "", 256)
}

// iq4xsScales decodes the eight 6-bit scales of the block at w, minus 32,
// into words 0–7 of both 128-bit halves of a ymm.
func iq4xsScales(w Register) VecVirtual {
	lo, hi := YMM(), YMM()
	VPBROADCASTD(Mem{Base: w, Disp: 4}, lo) // scales_l
	VPSRLVD(cIQ4XS.shiftLo, lo, lo)
	VPBROADCASTD(Mem{Base: w, Disp: 2}, hi) // scales_h (and two bytes of scales_l above it)
	VPSLLD(U8(4), hi, hi)
	VPSRLVD(cIQ4XS.shiftHi, hi, hi)
	m := YMM()
	VPBROADCASTD(cIQ4XS.maskLo, m)
	VPAND(m, lo, lo)
	VPBROADCASTD(cIQ4XS.maskHi, m)
	VPAND(m, hi, hi)
	VPOR(hi, lo, lo)
	VPBROADCASTD(cIQ4XS.bias, m)
	VPSUBD(m, lo, lo)
	VPACKSSDW(lo, lo, lo)    // per half: dwords 0–3 (or 4–7) as words, twice
	VPERMQ(U8(0x88), lo, lo) // qwords 0, 2, 0, 2: words s0…s7 in both halves
	return lo
}
