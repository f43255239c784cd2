package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Kernels on the packed Q6_K layout (simd/packed_q6k.go has the format).
// Per super-block and token the offset term comes first: eight VPDPWSSD
// of the rows' scales (widened to int16 pairs once per group-block) with
// the token's 16-element sums, times 32, scaled by d·da. Then per
// sub-block the four low-bit words and two high-bit words make eight
// registers of 6-bit quants shared by all tokens (VPTERNLOGD merges the
// low nibble with the two high bits moved to bits 4–5), and per token two
// chains of four VPDPBUSD give the sums of its two 16-element groups,
// each scaled by d·scale·da.

const (
	q6kGroupBytes = 3360
	q6kActBytes   = 320
	q6kQuants     = 288
	q6kSubBytes   = 384
)

func genPackedQ6K(v variant, reg *registry) {
	genPackedTiles(v, reg, "TypeQ6_K", packedQ6KTile)
}

// q6kRegs are the registers every sub-block step reads.
type q6kRegs struct {
	low, high, zero, d VecVirtual
}

func packedQ6KTile(toks int) string {
	name := fmt.Sprintf("packedQ6_Kx16T%dAVX512", toks)
	TEXT(name, NOSPLIT, packedSig)
	Doc(fmt.Sprintf("%s stores in dst[t·dstStride/4 + r] (lanes r set in mask) the dot products", name),
		fmt.Sprintf("of the 16 rows of one packed Q6_K group with %d interleaved packed activations, nb super-blocks.", toks))
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	c := q6kRegs{low: ZMM(), high: ZMM()}
	VPBROADCASTB(cLowNibble, c.low)
	VPBROADCASTB(cBits2, c.high)
	acc := zeroedZmm(toks)
	c.zero = zeroedZmm(1)[0] // chains copy it; see packedK45Tile
	loopBlocks(nb, func() {
		c.d = ZMM()
		VCVTPH2PS(Mem{Base: w}, c.d)
		packedQ6KOffset(w, a, acc, c)
		for s := 0; s < 8; s++ {
			packedQ6KSub(w, a, acc, c, s)
		}
		ADDQ(U32(q6kGroupBytes), w)
		ADDQ(U32(q6kActBytes*toks), a)
	})
	packedStore(acc)
	return name
}

// packedQ6KOffset subtracts d·da·32·Σ scale·sum from every accumulator.
func packedQ6KOffset(w, a Register, acc []VecVirtual, c q6kRegs) {
	sc := make([]VecVirtual, 8)
	for i := range sc {
		sc[i] = ZMM()
		VPMOVSXBW(Mem{Base: w, Disp: 32 + 32*i}, sc[i])
	}
	for t, x := range acc {
		at := Mem{Base: a, Disp: q6kActBytes * t}
		p := ZMM()
		VMOVDQA64(c.zero, p)
		for i, m := range sc {
			VPDPWSSD_BCST(at.Offset(4+4*i), m, p)
		}
		VPSLLD(U8(5), p, p)
		VCVTDQ2PS(p, p)
		s := ZMM()
		VMULPS_BCST(at, c.d, s)
		VFNMADD231PS(s, p, x)
	}
}

// q6kBuildQuants builds sub-block s's eight registers of 6-bit quants: for
// word k, elements 4k..4k+3 and 16+4k..16+4k+3 of every row.
func q6kBuildQuants(w Register, c q6kRegs, s int) []packedWeight {
	base := q6kQuants + q6kSubBytes*s
	hA, hB := ZMM(), ZMM()
	VMOVDQU64(Mem{Base: w, Disp: base + 256}, hA)
	VMOVDQU64(Mem{Base: w, Disp: base + 320}, hB)
	var out []packedWeight
	for k := 0; k < 4; k++ {
		lo, hi := ZMM(), ZMM()
		VMOVDQU64(Mem{Base: w, Disp: base + 64*k}, lo)
		VPSRLW(U8(4), lo, hi)
		q6kMerge(lo, hA, c, k)
		q6kMerge(hi, hB, c, k)
		out = append(out, packedWeight{lo, 64 + 32*s + 4*k}, packedWeight{hi, 64 + 32*s + 16 + 4*k})
	}
	return out
}

// q6kMerge sets q = (q & 0x0f) | bits 2k, 2k+1 of h moved to bits 4–5.
func q6kMerge(q, h VecVirtual, c q6kRegs, k int) {
	t := ZMM()
	switch {
	case k < 2:
		VPSLLW(U8(4-2*k), h, t)
		VPANDD(c.high, t, t)
	case k == 2:
		VPANDD(c.high, h, t)
	default:
		VPSRLW(U8(2), h, t)
		VPANDD(c.high, t, t)
	}
	VPTERNLOGD(U8(0xea), t, c.low, q) // q = (q & low) | t
}

// packedQ6KSub adds sub-block s's products to every token's accumulator.
func packedQ6KSub(w, a Register, acc []VecVirtual, c q6kRegs, s int) {
	ws := q6kBuildQuants(w, c, s)
	pair := ZMM()
	VPMOVSXBW(Mem{Base: w, Disp: 32 + 32*s}, pair)
	scales := []VecVirtual{ZMM(), ZMM()}
	VPSLLD(U8(16), pair, scales[0])
	VPSRAD(U8(16), scales[0], scales[0])
	VPSRAD(U8(16), pair, scales[1])
	for _, x := range scales {
		VCVTDQ2PS(x, x)
		VMULPS(c.d, x, x)
	}
	for t, x := range acc {
		at := Mem{Base: a, Disp: q6kActBytes * t}
		chains := []VecVirtual{ZMM(), ZMM()}
		for _, ch := range chains {
			VMOVDQA64(c.zero, ch)
		}
		for i, pw := range ws {
			VPDPBUSD_BCST(at.Offset(pw.act), pw.q, chains[i%2])
		}
		for i, ch := range chains {
			VCVTDQ2PS(ch, ch)
			f := ZMM()
			VMULPS_BCST(at, scales[i], f)
			VFMADD231PS(f, ch, x)
		}
	}
}
