package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// GEMM micro-kernels for prefill: gemmRows weight rows × T activation rows
// per call, so that each decoded weight block serves T tokens and each
// activation block serves gemmRows rows. Every accumulator keeps one
// (row, token) pair in eight float32 lanes; the pairs are reduced and
// stored at the end, dst[t·dstStride + r].
//
// The VNNI variant has 32 vector registers, which avo may hand out; only
// EVEX-encodable instructions reach registers 16–31, so its kernels use
// the EVEX spellings below.

const gemmRows = 4

const gemmSig = "func(nb int, w *byte, wStride int, a *byte, aStride int, dst *float32, dstStride int)"

func gemmName(base string, v variant, toks int) string {
	return fmt.Sprintf("gemm%s%dx%d%s", base, gemmRows, toks, v.suffix)
}

func gemmDoc(name, what string, toks int) {
	Doc(fmt.Sprintf("%s stores in dst[t·dstStride/4 + r] the dot products of %d weight", name, gemmRows),
		fmt.Sprintf("rows r (wStride bytes apart) with %d activation rows t (aStride bytes apart), %s.", toks, what))
}

// floatTile opens the float-weight GEMM tile `gemm<base>…` (F16, BF16):
// its TEXT and doc, the chunk count, the weight and activation row
// pointers, and the byte offset into the rows, zeroed.
type floatTile struct {
	name   string
	nb     Register
	ws, as []Register
	off    Register
}

func openFloatTile(base string, v variant, toks int, what string) floatTile {
	t := floatTile{name: gemmName(base, v, toks)}
	TEXT(t.name, NOSPLIT, gemmSig)
	gemmDoc(t.name, what, toks)
	t.nb = Load(Param("nb"), GP64())
	t.ws = pointers("w", "wStride", gemmRows)
	t.as = pointers("a", "aStride", toks)
	t.off = GP64()
	XORQ(t.off, t.off)
	return t
}

// pointers returns k base registers p, p+stride, p+2·stride, ….
func pointers(base, stride string, k int) []Register {
	rs := make([]Register, k)
	rs[0] = Load(Param(base), GP64())
	if k == 1 {
		return rs
	}
	s := Load(Param(stride), GP64())
	for i := 1; i < k; i++ {
		rs[i] = GP64()
		LEAQ(Mem{Base: rs[i-1], Index: s, Scale: 1}, rs[i])
	}
	return rs
}

// rowSet addresses up to four rows with three registers: rows 0–2 as
// base+i·stride, row 3 from its own base; the K-quant kernels need the
// general registers saved.
type rowSet struct {
	base, stride, base3 Register
	n                   int
}

func loadRowSet(base, stride string, n int) rowSet {
	s := rowSet{base: Load(Param(base), GP64()), n: n}
	if n > 1 {
		s.stride = Load(Param(stride), GP64())
	}
	if n > 3 {
		s.base3 = GP64()
		LEAQ(Mem{Base: s.base, Index: s.stride, Scale: 2}, s.base3)
		ADDQ(s.stride, s.base3)
	}
	return s
}

// mem addresses disp bytes into the current block of row i.
func (s rowSet) mem(i, disp int) Mem {
	switch i {
	case 0:
		return Mem{Base: s.base, Disp: disp}
	case 3:
		return Mem{Base: s.base3, Disp: disp}
	}
	return Mem{Base: s.base, Index: s.stride, Scale: uint8(i), Disp: disp}
}

// advance moves every row to its next block.
func (s rowSet) advance(bytes int) {
	ADDQ(U32(bytes), s.base)
	if s.n > 3 {
		ADDQ(U32(bytes), s.base3)
	}
}

// at addresses disp bytes into the current block of row p.
func at(p, off Register, disp int) Mem { return Mem{Base: p, Index: off, Scale: 1, Disp: disp} }

func pand(v variant, a, b, d Op) {
	if v.vnni {
		VPANDD(a, b, d)
	} else {
		VPAND(a, b, d)
	}
}

func pxor(v variant, a, b, d Op) {
	if v.vnni {
		VPXORD(a, b, d)
	} else {
		VPXOR(a, b, d)
	}
}

func movdqa(v variant, src, dst Op) {
	if v.vnni {
		VMOVDQA64(src, dst)
	} else {
		VMOVDQA(src, dst)
	}
}

func broadcast128(v variant, m Mem, y VecVirtual) {
	if v.vnni {
		VBROADCASTI32X4(m, y)
	} else {
		VBROADCASTI128(m, y)
	}
}

// zeroedV is zeroed for any variant.
func zeroedV(v variant, n int) []VecVirtual {
	r := make([]VecVirtual, n)
	for i := range r {
		r[i] = YMM()
		pxor(v, r[i], r[i], r[i])
	}
	return r
}

// accGrid returns zeroed accumulators acc[r][t].
func accGrid(v variant, toks int) [][]VecVirtual {
	g := make([][]VecVirtual, gemmRows)
	for r := range g {
		g[r] = zeroedV(v, toks)
	}
	return g
}

// reduce4 returns in an xmm the four horizontal sums of s[0..3].
func reduce4(v variant, s []VecVirtual) VecVirtual {
	h := make([]VecVirtual, 4)
	for i, acc := range s {
		h[i] = XMM()
		if v.vnni {
			VEXTRACTF32X4(U8(1), acc, h[i])
		} else {
			VEXTRACTF128(U8(1), acc, h[i])
		}
		VADDPS(acc.AsX(), h[i], h[i])
	}
	// Interleave pairs so that lanes line up by row, then fold halves.
	lo01, hi01, lo23, hi23 := XMM(), XMM(), XMM(), XMM()
	VUNPCKLPS(h[1], h[0], lo01)
	VUNPCKHPS(h[1], h[0], hi01)
	VADDPS(hi01, lo01, lo01) // s0a s1a s0b s1b
	VUNPCKLPS(h[3], h[2], lo23)
	VUNPCKHPS(h[3], h[2], hi23)
	VADDPS(hi23, lo23, lo23) // s2a s3a s2b s3b
	x, y := XMM(), XMM()
	VMOVLHPS(lo23, lo01, x) // s0a s1a s2a s3a
	VMOVHLPS(lo01, lo23, y) // s0b s1b s2b s3b
	VADDPS(y, x, x)
	return x
}

// storeGrid writes the reduced accumulators to dst, one token per row.
func storeGrid(v variant, acc [][]VecVirtual) {
	dst := Load(Param("dst"), GP64())
	stride := Load(Param("dstStride"), GP64())
	toks := len(acc[0])
	for t := 0; t < toks; t++ {
		col := make([]VecVirtual, gemmRows)
		for r := range col {
			col[r] = acc[r][t]
		}
		VMOVUPS(reduce4(v, col), Mem{Base: dst})
		if t+1 < toks {
			ADDQ(stride, dst)
		}
	}
	VZEROUPPER()
	RET()
}
