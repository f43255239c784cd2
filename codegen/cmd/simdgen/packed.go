package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Kernels on the row-interleaved ("packed") Q4_0 / Q8_0 layouts that the
// compiler writes for this backend (see simd/packed.go for the format).
// One group holds 16 weight rows; per block it stores the 16 row scales
// (binary16) and then 64-byte words whose 32-bit lane r holds four quants
// of row r. One zmm load therefore feeds one VPDPBUSD for all 16 rows
// against four activation bytes broadcast to every lane, and the result
// lanes are the rows themselves: no horizontal sums, one store per token.
//
// Weights are unsigned (Q4_0 nibbles; Q8_0 stored as q+128), so each
// token's packed activation block carries −c·Σa (c = 8 or 128) to start
// the integer sum from, and its scale as float32:
//
//	[0:4] da float32, [4:8] −c·Σa int32, [8:40] the 32 quants.
//
// Tokens are interleaved per block, T of them, so one pointer walks them.

const (
	packRows      = 16
	packActBytes  = 40
	packMaxTokens = 8 // largest T; the Go side groups tokens by it
)

const packedSig = "func(nb int, w *byte, a *byte, dst *float32, dstStride int, mask int)"

// packedFmt is one weight format's packed layout.
type packedFmt struct {
	typ, base string
	nibbles   bool
}

var (
	packedQ4_0 = packedFmt{"TypeQ4_0", "Q4_0", true}
	packedQ8_0 = packedFmt{"TypeQ8_0", "Q8_0", false}
)

// groupBytes is one block of one group: 16 scales and 16 rows of quants.
func (f packedFmt) groupBytes() int {
	if f.nibbles {
		return packRows * q4_0Bytes
	}
	return packRows * q8_0Bytes
}

func genPacked(v variant, reg *registry, f packedFmt) {
	genPackedTiles(v, reg, f.typ, func(toks int) string { return packedTile(f, toks) })
}

// genPackedTiles emits a packed layout's tiles for 1 … packMaxTokens
// tokens (tile returns each one's name) and registers them for weight
// type typ; only VNNI variants have packed kernels.
func genPackedTiles(v variant, reg *registry, typ string, tile func(toks int) string) {
	if !v.vnni {
		return
	}
	var names []string
	for toks := 1; toks <= packMaxTokens; toks++ {
		names = append(names, tile(toks))
	}
	reg.packed(v, typ, names)
}

// packedTile emits the kernel for 16 rows × toks tokens.
func packedTile(f packedFmt, toks int) string {
	name := fmt.Sprintf("packed%sx16T%dAVX512", f.base, toks)
	TEXT(name, NOSPLIT, packedSig)
	Doc(fmt.Sprintf("%s stores in dst[t·dstStride/4 + r] (lanes r set in mask) the dot products", name),
		fmt.Sprintf("of the 16 rows of one packed %s group with %d interleaved packed activations, nb blocks.", f.base, toks))
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	var mask VecVirtual
	if f.nibbles {
		mask = ZMM()
		VPBROADCASTB(cLowNibble, mask)
	}
	acc := make([]VecVirtual, toks)
	for t := range acc {
		acc[t] = ZMM()
		VPXORD(acc[t], acc[t], acc[t])
	}
	loopBlocks(nb, func() {
		ws := packedWeights(f, w, mask)
		dw := ZMM()
		VCVTPH2PS(Mem{Base: w}, dw)
		for t := range acc {
			packedToken(ws, dw, Mem{Base: a, Disp: packActBytes * t}, acc[t], toks == 1)
		}
		ADDQ(U32(f.groupBytes()), w)
		ADDQ(U32(packActBytes*toks), a)
	})
	packedStore(acc)
	return name
}

// packedWeight is one register of unsigned weight quants and the offset of
// the four activation bytes each lane pairs with.
type packedWeight struct {
	q   VecVirtual
	act int
}

// packedWeights loads (and for Q4_0 splits into nibbles) one block.
func packedWeights(f packedFmt, w Register, mask VecVirtual) []packedWeight {
	var out []packedWeight
	words := 8
	if f.nibbles {
		words = 4
	}
	for j := 0; j < words; j++ {
		x := ZMM()
		VMOVDQU64(Mem{Base: w, Disp: 2*packRows + 64*j}, x)
		if !f.nibbles {
			out = append(out, packedWeight{x, 4 * j})
			continue
		}
		hi := ZMM()
		VPSRLW(U8(4), x, hi)
		VPANDD(mask, x, x)
		VPANDD(mask, hi, hi)
		out = append(out, packedWeight{x, 4 * j}, packedWeight{hi, 16 + 4*j})
	}
	return out
}

// packedToken adds one block's products for one token to acc. A lone
// token splits its integer sum over two chains to halve their latency.
func packedToken(ws []packedWeight, dw VecVirtual, a Mem, acc VecVirtual, split bool) {
	p := ZMM()
	VPBROADCASTD(a.Offset(4), p)
	chains := []VecVirtual{p}
	if split {
		p2 := ZMM()
		VPXORD(p2, p2, p2)
		chains = append(chains, p2)
	}
	for i, pw := range ws {
		VPDPBUSD_BCST(a.Offset(8+pw.act), pw.q, chains[i%len(chains)])
	}
	if split {
		VPADDD(chains[1], p, p)
	}
	VCVTDQ2PS(p, p)
	s := ZMM()
	VMULPS_BCST(a, dw, s)
	VFMADD231PS(s, p, acc)
}

// packedStore writes each token's 16 lanes under the row mask.
func packedStore(acc []VecVirtual) {
	dst := Load(Param("dst"), GP64())
	stride := Load(Param("dstStride"), GP64())
	m := GP64()
	Load(Param("mask"), m)
	k := K()
	KMOVW(m.As32(), k)
	for t, x := range acc {
		VMOVUPS(x, k, Mem{Base: dst})
		if t+1 < len(acc) {
			ADDQ(stride, dst)
		}
	}
	VZEROUPPER()
	RET()
}
