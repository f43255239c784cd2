package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// K-quant GEMM (Q4_K, Q6_K × Q8_K), AVX-512 VNNI only: each row's
// super-block is decoded once into eight registers of unsigned levels
// (one per 32 elements) and its scales into stack vectors, then every
// token takes eight VPMADDUBSW + VPDPWSSD steps. The one-token tile
// doubles as the multi-row kernel of decode.

var (
	cNibble32 = ConstData("lowNibble32", U32(0x0f0f0f0f))
	cBits32   = ConstData("bits45x4", U32(0x30303030))
)

func genGemmK(v variant, reg *registry, typ string, maxToks int, tile func(toks int) string) {
	if !v.vnni {
		return
	}
	var names []string
	for toks := 1; toks <= maxToks; toks++ {
		names = append(names, tile(toks))
	}
	reg.gemm(v, typ, 256, names)
}

// kGemm is the frame shared by both formats: pointers, accumulators and
// the super-block loop; row(r) does one weight row's work per block.
type kGemm struct {
	ws, as rowSet
	acc    [][]VecVirtual
}

func newKGemm(name, format string, toks int) *kGemm {
	TEXT(name, NOSPLIT, gemmSig)
	gemmDoc(name, "nb "+format+" super-blocks against Q8_K", toks)
	return &kGemm{}
}

func (g *kGemm) run(v variant, toks, wBytes int, row func(r int)) {
	nb := Load(Param("nb"), GP64())
	g.ws = loadRowSet("w", "wStride", gemmRows)
	g.as = loadRowSet("a", "aStride", toks)
	g.acc = accGrid(v, toks)
	loopBlocks(nb, func() {
		for r := 0; r < gemmRows; r++ {
			row(r)
		}
		g.ws.advance(wBytes)
		g.as.advance(q8kBytes)
	})
	storeGrid(v, g.acc)
}

// dupWords turns dword lanes x into (x, x) word pairs, in place.
func dupWords(x VecVirtual) {
	t := YMM()
	VPSLLD(U8(16), x, t)
	VPORD(t, x, x)
}

func gemmQ4KTile(toks int) string {
	v := variants[1]
	name := gemmName("Q4_K", v, toks)
	g := newKGemm(name, "Q4_K", toks)
	buf, sc := AllocLocal(32), AllocLocal(32)
	g.run(v, toks, q4kBytes, func(r int) {
		kScalesQ4At(v, func(d int) Mem { return g.ws.mem(r, d) }, buf)
		s, m2 := YMM(), YMM()
		VPMOVZXWD(buf, s)
		dupWords(s)
		VMOVDQU64(s, sc)
		VPMOVZXWD(buf.Offset(16), m2)
		dupWords(m2)
		q := make([]VecVirtual, 8)
		for j := 0; j < 4; j++ {
			raw := YMM()
			VMOVDQU64(g.ws.mem(r, 16+32*j), raw)
			q[2*j], q[2*j+1] = YMM(), YMM()
			VPANDD_BCST(cNibble32, raw, q[2*j])
			VPSRLW(U8(4), raw, q[2*j+1])
			VPANDD_BCST(cNibble32, q[2*j+1], q[2*j+1])
		}
		d, dmin := broadcastF16(g.ws.mem(r, 0)), broadcastF16(g.ws.mem(r, 2))
		for t := range toks {
			a := func(d int) Mem { return g.as.mem(t, d) }
			sumi := YMM()
			VPXORD(sumi, sumi, sumi)
			for k := range q {
				p := YMM()
				VPMADDUBSW(a(q8kQs+32*k), q[k], p)
				VPDPWSSD_BCST(sc.Offset(4*k), p, sumi)
			}
			mins := YMM()
			VPMADDWD(a(q8kSums), m2, mins)
			f := YMM()
			VCVTDQ2PS(sumi, f)
			VCVTDQ2PS(mins, mins)
			VMULPS(d, f, f)
			VFNMADD231PS(dmin, mins, f)
			VFMADD231PS_BCST(a(0), f, g.acc[r][t])
		}
	})
	return name
}

func gemmQ6KTile(toks int) string {
	v := variants[1]
	name := gemmName("Q6_K", v, toks)
	g := newKGemm(name, "Q6_K", toks)
	words, sv := AllocLocal(32), AllocLocal(8*32)
	g.run(v, toks, q6kBytes, func(r int) {
		w := func(d int) Mem { return g.ws.mem(r, d) }
		off := q6Scales(w, words, sv)
		q := q6Levels(w)
		d := broadcastF16(w(208))
		for t := range toks {
			a := func(d int) Mem { return g.as.mem(t, d) }
			sumi := YMM()
			VPMADDWD(a(q8kSums), off, sumi)
			for k := range q {
				p := YMM()
				VPMADDUBSW(a(q8kQs+32*k), q[k], p)
				VPDPWSSD(sv.Offset(32*k), p, sumi)
			}
			f, s := YMM(), YMM()
			VCVTDQ2PS(sumi, f)
			VMULPS_BCST(a(0), d, s)
			VFMADD231PS(s, f, g.acc[r][t])
		}
	})
	return name
}

// q6Scales stores at sv the eight word vectors that scale each 32-element
// step (sixteen-element halves take their own scale) and returns −32·scale
// as sixteen words, which against the block sums takes off the levels'
// bias of 32.
func q6Scales(w func(int) Mem, words, sv Mem) VecVirtual {
	s := YMM()
	VPMOVSXBW(w(192), s)
	VMOVDQU64(s, words)
	for k := 0; k < 8; k++ {
		lo, hi := YMM(), XMM()
		VPBROADCASTW(words.Offset(4*k), lo)
		VPBROADCASTW(words.Offset(4*k+2), hi)
		VINSERTI32X4(U8(1), hi, lo, lo)
		VMOVDQU64(lo, sv.Offset(32*k))
	}
	neg := YMM()
	VPSLLW(U8(5), s, s)
	VPXORD(neg, neg, neg)
	VPSUBW(s, neg, neg)
	return neg
}

// q6Levels returns the 256 unsigned 6-bit levels of the block at w, 32 to
// a register in element order.
func q6Levels(w func(int) Mem) []VecVirtual {
	q := make([]VecVirtual, 8)
	for h := 0; h < 2; h++ {
		ql := []VecVirtual{YMM(), YMM()}
		VMOVDQU64(w(64*h), ql[0])
		VMOVDQU64(w(64*h+32), ql[1])
		qh := YMM()
		VMOVDQU64(w(128+32*h), qh)
		for quarter := 0; quarter < 4; quarter++ {
			x, hi := YMM(), YMM()
			if quarter < 2 {
				VPANDD_BCST(cNibble32, ql[quarter], x)
			} else {
				VPSRLW(U8(4), ql[quarter-2], x)
				VPANDD_BCST(cNibble32, x, x)
			}
			switch shift := 4 - 2*quarter; {
			case shift > 0:
				VPSLLW(U8(shift), qh, hi)
			case shift < 0:
				VPSRLW(U8(-shift), qh, hi)
			default:
				VMOVDQA64(qh, hi)
			}
			VPANDD_BCST(cBits32, hi, hi)
			VPORD(hi, x, x)
			q[4*h+quarter] = x
		}
	}
	return q
}
