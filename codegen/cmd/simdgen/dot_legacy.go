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

// weightKind says how a 32-element block stores its levels.
type weightKind int

const (
	signedBytes  weightKind = iota // Q8_0: int8 levels
	offsetNibble                   // Q4_0: nibble q, level q−8
	tableNibble                    // IQ4_NL: nibble q, level iq4Levels[q]
)

// consts holds the broadcast constants a legacy kernel keeps in registers.
type consts struct{ ones16, mask, eights, table VecVirtual }

func loadConsts(v variant, kind weightKind) consts {
	var c consts
	if !v.vnni {
		c.ones16 = YMM()
		VPBROADCASTW(cOnes16, c.ones16)
	}
	if kind != signedBytes {
		c.mask = broadcastByte(cLowNibble)
	}
	switch kind {
	case offsetNibble:
		c.eights = broadcastByte(cEight)
	case tableNibble:
		c.table = YMM()
		VBROADCASTI128(cIQ4Levels, c.table)
	}
	return c
}

// actBlock is one Q8_0 activation block loaded once for every weight row.
type actBlock struct {
	q, d VecVirtual
	off  VecVirtual // Q4_0 only: the 8·Σa term, int16 pairs (AVX2) or int32 (VNNI)
}

func loadAct(v variant, c consts, a Mem, kind weightKind) actBlock {
	b := actBlock{q: YMM(), d: broadcastF16(a)}
	VMOVDQU(a.Offset(2), b.q)
	if kind == offsetNibble {
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
	qw := YMM()
	VMOVDQU(w.Offset(2), qw)
	signedBlock(v, c, a, qw, w, acc)
}

// signedBlock adds the block of int8 levels qw, scaled by the binary16 at
// w, to acc. The products take the unsigned |qw| times the activations
// with qw's signs (VPSIGNB): |level| and |a| are at most 127, so a pair of
// products fits VPMADDUBSW's int16 without saturating.
func signedBlock(v variant, c consts, a actBlock, qw VecVirtual, w Mem, acc VecVirtual) {
	absw, sa := YMM(), YMM()
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

// unpackNibbles loads the 16 bytes at m as 32 nibbles in element order:
// the low nibbles (elements 0–15) in the lower half, the high ones
// (elements 16–31) in the upper half.
func unpackNibbles(m Mem, mask VecVirtual) VecVirtual {
	lo := XMM()
	VMOVDQU(m, lo)
	hi := XMM()
	VPSRLW(U8(4), lo, hi)
	q := lo.AsY().(VecVirtual)
	VINSERTI128(U8(1), hi, q, q)
	VPAND(mask, q, q)
	return q
}

// iq4Block adds one IQ4_NL·Q8_0 block: each nibble indexes the level
// table (VPSHUFB looks up 16 bytes per 128-bit lane, the table is in both).
func iq4Block(v variant, c consts, a actBlock, w Mem, acc VecVirtual) {
	q := unpackNibbles(w.Offset(2), c.mask)
	VPSHUFB(q, c.table, q)
	signedBlock(v, c, a, q, w, acc)
}

// q4Block adds one Q4_0·Q8_0 block: Σ(q-8)·a = Σq·a − 8·Σa, with the
// unsigned nibbles q feeding the unsigned operand directly.
func q4Block(v variant, c consts, a actBlock, w Mem, acc VecVirtual) {
	q := unpackNibbles(w.Offset(2), c.mask)
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
	genLegacy(v, reg, "TypeQ8_0", "dotQ8_0", q8_0Bytes, signedBytes, q8Block)
}

func genDotQ4_0(v variant, reg *registry) {
	genLegacy(v, reg, "TypeQ4_0", "dotQ4_0", q4_0Bytes, offsetNibble, q4Block)
}

func genDotIQ4NL(v variant, reg *registry) {
	genLegacy(v, reg, "TypeIQ4_NL", "dotIQ4_NL", q4_0Bytes, tableNibble, iq4Block)
}

// genLegacy emits the single-row and the multi-row kernel of one format.
func genLegacy(v variant, reg *registry, typ, base string, wBytes int, kind weightKind, block blockFunc) {
	one := fname(base, v)
	TEXT(one, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(one + " returns the dot product of nb weight blocks at w with Q8_0 blocks at a.")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	c := loadConsts(v, kind)
	acc := zeroed(1)[0]
	loopBlocks(nb, func() {
		block(v, c, loadAct(v, c, Mem{Base: a}, kind), Mem{Base: w}, acc)
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
	c = loadConsts(v, kind)
	accs := zeroed(rowsPerCall)
	off := GP64()
	XORQ(off, off)
	loopBlocks(nb, func() {
		act := loadAct(v, c, Mem{Base: a}, kind)
		for r, acc := range accs {
			block(v, c, act, Mem{Base: ws[r], Index: off, Scale: 1}, acc)
		}
		ADDQ(U32(wBytes), off)
		ADDQ(U32(q8_0Bytes), a)
	})
	storeSums(accs)
	reg.dot(v, typ, one, rows, 32)
}
