package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Kernels on the packed IQ4_XS layout (simd/packed_iq4xs.go has the
// format). Per sub-block the four index words split into eight nibble
// registers shared by all tokens, and a VPSHUFB turns each into its
// levels plus 128 (unsigned, for VPDPBUSD). Per token a chain of eight
// VPDPBUSD, started from the activation block's −128·Σa, gives the 16
// rows' exact integer sums; times the rows' scales (VPMULLD) they add up
// over the super-block in int32. Then, as quant's dotIQ4XS does, per
// super-block acc += float(Σ)·(d·da) by a multiply and an add (not a
// fused one): the kernel's outputs are the reference's bits.

const (
	iq4xsGroupBytes = 2208
	iq4xsActBytes   = 320
	iq4xsScaleBytes = 32
	iq4xsQuants     = 160
	iq4xsActQuants  = 64
)

// cIQ4LevelsBiased is the level table plus 128, as unsigned bytes.
var cIQ4LevelsBiased = iq4LevelsBiased()

func iq4LevelsBiased() Mem {
	m := GLOBL("iq4LevelsBiased", RODATA|NOPTR)
	for i, v := range []int{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113} {
		DATA(i, U8(v+128))
	}
	return m
}

func genPackedIQ4XS(v variant, reg *registry) {
	genPackedTiles(v, reg, "TypeIQ4_XS", packedIQ4XSTile)
}

// iq4xsRegs are the registers every sub-block step reads.
type iq4xsRegs struct {
	mask, table VecVirtual
}

func packedIQ4XSTile(toks int) string {
	name := fmt.Sprintf("packedIQ4_XSx16T%dAVX512", toks)
	TEXT(name, NOSPLIT, packedSig)
	Doc(fmt.Sprintf("%s stores in dst[t·dstStride/4 + r] (lanes r set in mask) the dot products", name),
		fmt.Sprintf("of the 16 rows of one packed IQ4_XS group with %d interleaved packed activations, nb super-blocks.", toks))
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	c := iq4xsRegs{mask: ZMM(), table: ZMM()}
	VPBROADCASTB(cLowNibble, c.mask)
	VBROADCASTI32X4(cIQ4LevelsBiased, c.table)
	acc := zeroedZmm(toks)
	loopBlocks(nb, func() {
		isum := make([]VecVirtual, toks)
		for s := 0; s < 8; s++ {
			packedIQ4XSSub(w, a, isum, c, s)
		}
		d := ZMM()
		VCVTPH2PS(Mem{Base: w}, d)
		for t, x := range acc {
			f := ZMM()
			VMULPS_BCST(Mem{Base: a, Disp: iq4xsActBytes * t}, d, f)
			VCVTDQ2PS(isum[t], isum[t])
			VMULPS(isum[t], f, f)
			VADDPS(f, x, x)
		}
		ADDQ(U32(iq4xsGroupBytes), w)
		ADDQ(U32(iq4xsActBytes*toks), a)
	})
	packedStore(acc)
	return name
}

// packedIQ4XSSub adds sub-block s's scaled integer sums to every token's
// isum (sub-block 0 starts them).
func packedIQ4XSSub(w, a Register, isum []VecVirtual, c iq4xsRegs, s int) {
	var ws []packedWeight
	for k := 0; k < 4; k++ {
		lo, hi := ZMM(), ZMM()
		VMOVDQU64(Mem{Base: w, Disp: iq4xsQuants + 256*s + 64*k}, lo)
		VPSRLW(U8(4), lo, hi)
		VPANDD(c.mask, lo, lo)
		VPANDD(c.mask, hi, hi)
		VPSHUFB(lo, c.table, lo)
		VPSHUFB(hi, c.table, hi)
		act := iq4xsActQuants + 32*s + 4*k
		ws = append(ws, packedWeight{lo, act}, packedWeight{hi, act + 16})
	}
	scale := ZMM()
	VPMOVSXBD(Mem{Base: w, Disp: iq4xsScaleBytes + 16*s}, scale)
	for t := range isum {
		at := Mem{Base: a, Disp: iq4xsActBytes * t}
		p := ZMM()
		VPBROADCASTD(at.Offset(4+4*s), p)
		for _, pw := range ws {
			VPDPBUSD_BCST(at.Offset(pw.act), pw.q, p)
		}
		if s == 0 {
			isum[t] = ZMM()
			VPMULLD(scale, p, isum[t])
		} else {
			VPMULLD(scale, p, p)
			VPADDD(p, isum[t], isum[t])
		}
	}
}
