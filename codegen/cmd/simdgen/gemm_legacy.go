package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Legacy-block GEMM (Q4_0, Q8_0 weights × Q8_0 activations). Per block:
// the scale products dw[r]·da[t] are formed once, vectorised, and parked
// on the stack, where each pair's FMA broadcasts its own; the integer part
// of each pair is one VPDPBUSD (VNNI) or VPMADDUBSW+VPMADDWD (AVX2).
//
// VNNI needs unsigned weights: Q4_0 nibbles are, and Q8_0 bytes become so
// by flipping the sign bit (w+128). Either way Σu·a = Σw·a + c·Σa, so each
// pair's integer sum starts from −c·Σa of its token, computed once per
// token. AVX2 Q4_0 uses the same offset in int16 pairs; AVX2 Q8_0 moves the
// weight signs onto the activations (VPSIGNB) as the row kernels do.

var (
	cFlip      = ConstData("signBit", U8(0x80))
	cNibbleShr = nibbleShifts()
)

// nibbleShifts shifts the upper 128-bit half of a broadcast Q4_0 block by
// four, so that after masking it holds the high nibbles.
func nibbleShifts() Mem {
	m := GLOBL("nibbleShifts", RODATA|NOPTR)
	for i, s := range []uint64{0, 0, 4, 4} {
		DATA(8*i, U64(s))
	}
	return m
}

// legacyGemm describes one weight format for genGemmLegacy.
type legacyGemm struct {
	typ, base string
	wBytes    int
	nibbles   bool
}

var (
	gemmQ8_0 = legacyGemm{"TypeQ8_0", "Q8_0", q8_0Bytes, false}
	gemmQ4_0 = legacyGemm{"TypeQ4_0", "Q4_0", q4_0Bytes, true}
)

// gemmToks lists the token counts of the generated tiles; the wrapper
// takes the largest that fits and the smaller ones for the rest.
func gemmToks(v variant) int {
	if v.vnni {
		return 4
	}
	return 2
}

func genGemmLegacy(v variant, reg *registry, f legacyGemm) {
	var names []string
	for toks := 1; toks <= gemmToks(v); toks++ {
		names = append(names, gemmLegacyTile(v, f, toks))
	}
	reg.gemm(v, f.typ, 32, names)
}

// legacyState is what one tile kernel keeps across its block loop.
type legacyState struct {
	v        variant
	f        legacyGemm
	ws, as   []Register
	woff     Register
	aoff     Register
	scales   Mem
	c        VecVirtual // VNNI: the offset byte; AVX2: ones16
	mask     VecVirtual // Q4_0: low nibble mask
	shifts   VecVirtual // Q4_0: nibbleShifts
	acc      [][]VecVirtual
	negOff   []VecVirtual // per token: −c·Σa (int32, VNNI) or 8·Σa pairs (int16, AVX2 Q4_0)
	actBytes []VecVirtual // AVX2 Q8_0: the activation bytes
}

func gemmLegacyTile(v variant, f legacyGemm, toks int) string {
	name := gemmName(f.base, v, toks)
	TEXT(name, NOSPLIT, gemmSig)
	gemmDoc(name, "Q8_0 blocks, nb of them", toks)
	s := &legacyState{v: v, f: f}
	s.scales = AllocLocal(16 * (toks + toks%2))
	nb := Load(Param("nb"), GP64())
	s.ws = pointers("w", "wStride", gemmRows)
	s.as = pointers("a", "aStride", toks)
	s.woff, s.aoff = GP64(), GP64()
	XORQ(s.woff, s.woff)
	XORQ(s.aoff, s.aoff)
	s.loadConsts()
	s.acc = accGrid(v, toks)
	loopBlocks(nb, func() {
		s.scaleProducts()
		s.tokenTerms()
		for r := range s.ws {
			s.row(r)
		}
		ADDQ(U32(f.wBytes), s.woff)
		ADDQ(U32(q8_0Bytes), s.aoff)
	})
	storeGrid(v, s.acc)
	return name
}

func (s *legacyState) loadConsts() {
	s.c = YMM()
	switch {
	case s.v.vnni && s.f.nibbles:
		VPBROADCASTB(cEight, s.c)
	case s.v.vnni:
		VPBROADCASTB(cFlip, s.c)
	default:
		VPBROADCASTW(cOnes16, s.c)
	}
	if s.f.nibbles {
		s.mask = broadcastByte(cLowNibble)
		s.shifts = YMM()
		if s.v.vnni {
			VMOVDQU64(cNibbleShr, s.shifts)
		} else {
			VMOVDQU(cNibbleShr, s.shifts)
		}
	}
}

// scaleProducts stores dw[r]·da[t] at scales[4t+r] as float32.
func (s *legacyState) scaleProducts() {
	g, x := GP32(), XMM()
	MOVWLZX(at(s.ws[0], s.woff, 0), g)
	VMOVD(g, x)
	for r := 1; r < gemmRows; r++ {
		VPINSRW(U8(r), at(s.ws[r], s.woff, 0), x, x)
	}
	VPBROADCASTQ(x, x)
	dw := YMM()
	VCVTPH2PS(x, dw)
	toks := len(s.as)
	for t := 0; t < toks; t += 2 {
		t1 := min(t+1, toks-1)
		x0, x1 := XMM(), XMM()
		VPBROADCASTW(at(s.as[t], s.aoff, 0), x0)
		VPBROADCASTW(at(s.as[t1], s.aoff, 0), x1)
		VPUNPCKLQDQ(x1, x0, x0)
		p := YMM()
		VCVTPH2PS(x0, p)
		VMULPS(dw, p, p)
		VMOVUPS(p, s.scales.Offset(16*t))
	}
}

// tokenTerms prepares each token's share: the offset term, and for AVX2
// Q8_0 the activation bytes themselves.
func (s *legacyState) tokenTerms() {
	s.negOff, s.actBytes = nil, nil
	var eights VecVirtual
	if !s.v.vnni && s.f.nibbles {
		eights = broadcastByte(cEight)
	}
	for _, a := range s.as {
		q := at(a, s.aoff, 2)
		switch {
		case s.v.vnni:
			sum, neg := YMM(), YMM()
			pxor(s.v, sum, sum, sum)
			VPDPBUSD(q, s.c, sum)
			pxor(s.v, neg, neg, neg)
			VPSUBD(sum, neg, neg)
			s.negOff = append(s.negOff, neg)
		case s.f.nibbles:
			off := YMM()
			VPMADDUBSW(q, eights, off)
			s.negOff = append(s.negOff, off)
		default:
			b := YMM()
			VMOVDQU(q, b)
			s.actBytes = append(s.actBytes, b)
		}
	}
}

// row decodes weight row r's block and adds its products with every token.
func (s *legacyState) row(r int) {
	wq := at(s.ws[r], s.woff, 2)
	if !s.v.vnni && !s.f.nibbles {
		s.rowSigned(wq, r)
		return
	}
	u := YMM()
	switch {
	case s.f.nibbles:
		broadcast128(s.v, wq, u)
		VPSRLVQ(s.shifts, u, u)
		pand(s.v, s.mask, u, u)
	default:
		VPXORD(wq, s.c, u)
	}
	for t, a := range s.as {
		p := YMM()
		if s.v.vnni {
			movdqa(s.v, s.negOff[t], p)
			VPDPBUSD(at(a, s.aoff, 2), u, p)
		} else {
			VPMADDUBSW(at(a, s.aoff, 2), u, p)
			VPSUBW(s.negOff[t], p, p)
			VPMADDWD(s.c, p, p)
		}
		s.accumulate(p, r, t)
	}
}

// rowSigned is AVX2 Q8_0: |w| against the activations carrying w's sign.
func (s *legacyState) rowSigned(wq Mem, r int) {
	w, abs := YMM(), YMM()
	VMOVDQU(wq, w)
	VPSIGNB(w, w, abs)
	for t := range s.as {
		p := YMM()
		VPSIGNB(w, s.actBytes[t], p)
		VPMADDUBSW(p, abs, p)
		VPMADDWD(s.c, p, p)
		s.accumulate(p, r, t)
	}
}

// accumulate adds float(p)·dw[r]·da[t] to acc[r][t].
func (s *legacyState) accumulate(p VecVirtual, r, t int) {
	VCVTDQ2PS(p, p)
	m := s.scales.Offset(4 * (4*t + r))
	if s.v.vnni {
		VFMADD231PS_BCST(m, p, s.acc[r][t])
		return
	}
	d := YMM()
	VBROADCASTSS(m, d)
	VFMADD231PS(d, p, s.acc[r][t])
}
