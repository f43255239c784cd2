package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Kernels on the packed Q4_K layout (simd/packed_k.go has the format).
// Per super-block and token the mins term comes first: four VPDPWSSD of
// the rows' mins (widened to int16 pairs once per group-block) with the
// token's sub-block sums, scaled by dmin·da. Then per sub-block, whose four
// words split into eight nibble registers shared by all tokens, eight
// VPDPBUSD give the 16 rows' integer sums, scaled by d·scale (widened and
// converted once per sub-block) times da.

const (
	kGroupBytes = 2368
	kActBytes   = 288
	kQuants     = 320
)

func genPackedQ4K(v variant, reg *registry) {
	genPackedTiles(v, reg, "TypeQ4_K", packedQ4KTile)
}

func packedQ4KTile(toks int) string {
	name := fmt.Sprintf("packedQ4_Kx16T%dAVX512", toks)
	TEXT(name, NOSPLIT, packedSig)
	Doc(fmt.Sprintf("%s stores in dst[t·dstStride/4 + r] (lanes r set in mask) the dot products", name),
		fmt.Sprintf("of the 16 rows of one packed Q4_K group with %d interleaved packed activations, nb super-blocks.", toks))
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	mask := ZMM()
	VPBROADCASTB(cLowNibble, mask)
	acc := zeroedZmm(toks)
	// Chains start as copies of zero: zeroing a register by XOR with
	// itself reads it, which makes avo keep it live from the entry.
	zero := zeroedZmm(1)[0]
	loopBlocks(nb, func() {
		packedQ4KMins(w, a, acc, zero)
		d := ZMM()
		VCVTPH2PS(Mem{Base: w}, d)
		for s := 0; s < 8; s++ {
			packedQ4KSub(w, a, acc, [3]VecVirtual{mask, d, zero}, s)
		}
		ADDQ(U32(kGroupBytes), w)
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

// packedQ4KSub adds sub-block s's products to every token's accumulator;
// c holds the low-nibble mask, the rows' d and a zero register.
func packedQ4KSub(w, a Register, acc []VecVirtual, c [3]VecVirtual, s int) {
	mask, d, zero := c[0], c[1], c[2]
	var ws []packedWeight
	for k := 0; k < 4; k++ {
		lo, hi := ZMM(), ZMM()
		VMOVDQU64(Mem{Base: w, Disp: kQuants + 256*s + 64*k}, lo)
		VPSRLW(U8(4), lo, hi)
		VPANDD(mask, lo, lo)
		VPANDD(mask, hi, hi)
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
