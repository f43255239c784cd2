package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Legacy block dot products against Q8_0 activations. Per block the
// integer products are summed exactly in eight int32 lanes, converted to
// float and multiplied by dw·da into a float accumulator with FMA; only the
// float rounding order differs from quant.VecDot.

const (
	q8_0Bytes = 34
	q4_0Bytes = 18
)

// consts holds the broadcast constants a legacy kernel keeps in registers.
type consts struct{ ones16, mask, eights VecVirtual }

func loadConsts(v variant, nibbles bool) consts {
	var c consts
	if !v.vnni {
		c.ones16 = YMM()
		VPBROADCASTW(cOnes16, c.ones16)
	}
	if nibbles {
		c.mask = broadcastByte(cLowNibble)
		c.eights = broadcastByte(cEight)
	}
	return c
}

// actBlock is one Q8_0 activation block loaded once for every weight row.
type actBlock struct {
	q, d VecVirtual
	off  VecVirtual // Q4_0 only: the 8·Σa term, int16 pairs (AVX2) or int32 (VNNI)
}

func loadAct(v variant, c consts, a Mem, nibbles bool) actBlock {
	b := actBlock{q: YMM(), d: broadcastF16(a)}
	VMOVDQU(a.Offset(2), b.q)
	if nibbles {
		b.off = YMM()
		if v.vnni {
			VPXOR(b.off, b.off, b.off)
			VPDPBUSD(b.q, c.eights, b.off)
		} else {
			VPMADDUBSW(b.q, c.eights, b.off)
		}
	}
	return b
}

// q8Block adds one Q8_0·Q8_0 block (weights at w) to acc.
func q8Block(v variant, c consts, a actBlock, w Mem, acc VecVirtual) {
	qw, absw, sa := YMM(), YMM(), YMM()
	VMOVDQU(w.Offset(2), qw)
	VPSIGNB(qw, qw, absw)
	VPSIGNB(qw, a.q, sa)
	p := YMM()
	if v.vnni {
		VPXOR(p, p, p)
		VPDPBUSD(sa, absw, p)
	} else {
		VPMADDUBSW(sa, absw, p)
		VPMADDWD(c.ones16, p, p)
	}
	scaleAccumulate(p, a.d, w, acc)
}

// q4Block adds one Q4_0·Q8_0 block: Σ(q-8)·a = Σq·a − 8·Σa, with the
// unsigned nibbles q feeding the unsigned operand directly.
func q4Block(v variant, c consts, a actBlock, w Mem, acc VecVirtual) {
	lo := XMM()
	VMOVDQU(w.Offset(2), lo)
	hi := XMM()
	VPSRLW(U8(4), lo, hi)
	q := lo.AsY()
	VINSERTI128(U8(1), hi, q, q)
	VPAND(c.mask, q, q)
	p := YMM()
	if v.vnni {
		VPXOR(p, p, p)
		VPDPBUSD(a.q, q, p)
		VPSUBD(a.off, p, p)
	} else {
		VPMADDUBSW(a.q, q, p)
		VPSUBW(a.off, p, p)
		VPMADDWD(c.ones16, p, p)
	}
	scaleAccumulate(p, a.d, w, acc)
}

// scaleAccumulate does acc += float(isum lanes) · (dw·da); dw is the
// binary16 at w.
func scaleAccumulate(isum, da VecVirtual, w Mem, acc VecVirtual) {
	f := YMM()
	VCVTDQ2PS(isum, f)
	d := broadcastF16(w)
	VMULPS(da, d, d)
	VFMADD231PS(d, f, acc)
}

type blockFunc func(v variant, c consts, a actBlock, w Mem, acc VecVirtual)

func genDotQ8_0(v variant, reg *registry) {
	genLegacy(v, reg, "TypeQ8_0", "dotQ8_0", q8_0Bytes, false, q8Block)
}

func genDotQ4_0(v variant, reg *registry) {
	genLegacy(v, reg, "TypeQ4_0", "dotQ4_0", q4_0Bytes, true, q4Block)
}

// genLegacy emits the single-row and the multi-row kernel of one format.
func genLegacy(v variant, reg *registry, typ, base string, wBytes int, nibbles bool, block blockFunc) {
	one := fname(base, v)
	TEXT(one, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(one + " returns the dot product of nb weight blocks at w with Q8_0 blocks at a.")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	c := loadConsts(v, nibbles)
	acc := zeroed(1)[0]
	loopBlocks(nb, func() {
		block(v, c, loadAct(v, c, Mem{Base: a}, nibbles), Mem{Base: w}, acc)
		ADDQ(U32(wBytes), w)
		ADDQ(U32(q8_0Bytes), a)
	})
	finishDot(acc)

	rows := fname(base+"Rows", v)
	TEXT(rows, NOSPLIT, "func(nb int, w *byte, stride int, a *byte, dst *float32)")
	Doc(rows+" stores in dst[0:4] the dot products of four weight rows,", "stride bytes apart from w, with the nb Q8_0 blocks at a.")
	nb = Load(Param("nb"), GP64())
	ws := rowPointers()
	a = Load(Param("a"), GP64())
	c = loadConsts(v, nibbles)
	accs := zeroed(rowsPerCall)
	off := GP64()
	XORQ(off, off)
	loopBlocks(nb, func() {
		act := loadAct(v, c, Mem{Base: a}, nibbles)
		for r, acc := range accs {
			block(v, c, act, Mem{Base: ws[r], Index: off, Scale: 1}, acc)
		}
		ADDQ(U32(wBytes), off)
		ADDQ(U32(q8_0Bytes), a)
	})
	storeSums(accs)
	reg.dot(v, typ, one, rows, 32)
}
