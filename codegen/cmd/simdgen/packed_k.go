package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Kernels on the packed Q4_K and Q5_K layouts (simd/packed_k.go and
// packed_q5k.go have the formats).
// Per super-block and token the mins term comes first: four VPDPWSSD of
// the rows' mins (widened to int16 pairs once per group-block) with the
// token's sub-block sums, scaled by dmin·da. Then per sub-block, whose four
// words split into eight nibble registers shared by all tokens, eight
// VPDPBUSD give the 16 rows' integer sums, scaled by d·scale (widened and
// converted once per sub-block) times da. Q5_K's tiles first add 16 to
// each nibble operand's bytes whose fifth bit its mask word sets (KMOVQ,
// a masked VPADDB), once per sub-block for all tokens.

const (
	kGroupBytes  = 2368
	q5kGroupSize = kGroupBytes + 8*64
	kActBytes    = 288
	kQuants      = 320
)

var cSixteen = ConstData("sixteen", U8(16))

func genPackedQ4K(v variant, reg *registry) {
	genPackedTiles(v, reg, "TypeQ4_K", func(toks int) string { return packedK45Tile("Q4_K", toks) })
}

func genPackedQ5K(v variant, reg *registry) {
	genPackedTiles(v, reg, "TypeQ5_K", func(toks int) string { return packedK45Tile("Q5_K", toks) })
}

// k45Regs are the registers every sub-block step reads: the low-nibble
// mask, the rows' d, a zero, and for Q5_K sixteen in every byte (nil for
// Q4_K).
type k45Regs struct {
	mask, d, zero, sixteen VecVirtual
}

func packedK45Tile(typ string, toks int) string {
	name := fmt.Sprintf("packed%sx16T%dAVX512", typ, toks)
	TEXT(name, NOSPLIT, packedSig)
	Doc(fmt.Sprintf("%s stores in dst[t·dstStride/4 + r] (lanes r set in mask) the dot products", name),
		fmt.Sprintf("of the 16 rows of one packed %s group with %d interleaved packed activations, nb super-blocks.", typ, toks))
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	var c k45Regs
	c.mask = ZMM()
	VPBROADCASTB(cLowNibble, c.mask)
	group := kGroupBytes
	if typ == "Q5_K" {
		c.sixteen = ZMM()
		VPBROADCASTB(cSixteen, c.sixteen)
		group = q5kGroupSize
	}
	acc := zeroedZmm(toks)
	// Chains start as copies of zero: zeroing a register by XOR with
	// itself reads it, which makes avo keep it live from the entry.
	c.zero = zeroedZmm(1)[0]
	loopBlocks(nb, func() {
		packedQ4KMins(w, a, acc, c.zero)
		c.d = ZMM()
		VCVTPH2PS(Mem{Base: w}, c.d)
		for s := 0; s < 8; s++ {
			packedK45Sub(w, a, acc, c, s)
		}
		ADDQ(U32(group), w)
		ADDQ(U32(kActBytes*toks), a)
	})
	packedStore(acc)
	return name
}

// packedQ4KMins subtracts dmin·da·Σ min·sum from every token's accumulator.
func packedQ4KMins(w, a Register, acc []VecVirtual, zero VecVirtual) {
	mins := make([]VecVirtual, 4)
	for i := range mins {
		mins[i] = ZMM()
		VPMOVZXBW(Mem{Base: w, Disp: 192 + 32*i}, mins[i])
	}
	dmin := ZMM()
	VCVTPH2PS(Mem{Base: w, Disp: 32}, dmin)
	for t, x := range acc {
		at := Mem{Base: a, Disp: kActBytes * t}
		p := ZMM()
		VMOVDQA64(zero, p)
		for i, m := range mins {
			VPDPWSSD_BCST(at.Offset(4+4*i), m, p)
		}
		VCVTDQ2PS(p, p)
		s := ZMM()
		VMULPS_BCST(at, dmin, s)
		VFNMADD231PS(s, p, x)
	}
}

// packedK45Sub adds sub-block s's products to every token's accumulator.
func packedK45Sub(w, a Register, acc []VecVirtual, c k45Regs, s int) {
	mask, d, zero := c.mask, c.d, c.zero
	var ws []packedWeight
	for k := 0; k < 4; k++ {
		lo, hi := ZMM(), ZMM()
		VMOVDQU64(Mem{Base: w, Disp: kQuants + 256*s + 64*k}, lo)
		VPSRLW(U8(4), lo, hi)
		VPANDD(mask, lo, lo)
		VPANDD(mask, hi, hi)
		if c.sixteen != nil {
			for h, q := range []VecVirtual{lo, hi} {
				m := K()
				KMOVQ(Mem{Base: w, Disp: kGroupBytes + 64*s + 8*(2*k+h)}, m)
				VPADDB(c.sixteen, q, m, q)
			}
		}
		ws = append(ws, packedWeight{lo, 32 + 32*s + 4*k}, packedWeight{hi, 32 + 32*s + 16 + 4*k})
	}
	scale := ZMM()
	VPMOVZXBD(Mem{Base: w, Disp: 64 + 16*s}, scale)
	VCVTDQ2PS(scale, scale)
	VMULPS(d, scale, scale)
	for t, x := range acc {
		at := Mem{Base: a, Disp: kActBytes * t}
		chains := []VecVirtual{ZMM()}
		if len(acc) == 1 {
			chains = append(chains, ZMM())
		}
		for _, c := range chains {
			VMOVDQA64(zero, c)
		}
		for i, pw := range ws {
			VPDPBUSD_BCST(at.Offset(pw.act), pw.q, chains[i%len(chains)])
		}
		p := chains[0]
		if len(chains) > 1 {
			VPADDD(chains[1], p, p)
		}
		VCVTDQ2PS(p, p)
		f := ZMM()
		VMULPS_BCST(at, scale, f)
		VFMADD231PS(f, p, x)
	}
}
