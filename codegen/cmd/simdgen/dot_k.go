package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// K-quant dot products against Q8_K activations (d float32 | 256 int8 |
// 16 int16 sums of 16). Each super-block's integer sums are exact in eight
// int32 lanes; scales multiply int16 pair sums with VPMADDWD. They use
// AVX2 instructions only, so every variant shares them, and a multi-row
// form is left to the wrapper's loop over rows.

const (
	q8kBytes = 292
	q8kQs    = 4
	q8kSums  = 260
	q4kBytes = 144
	q6kBytes = 210
)

var (
	cLow6  = ConstData("low6", U8(0x3f))
	cBits2 = ConstData("bits45", U8(0x30))
)

// kScalesQ4 decodes the twelve packed 6-bit scales and mins of the Q4_K
// block at w into sixteen words at buf: eight scales, then eight mins.
func kScalesQ4(w Register, buf Mem) {
	kScalesQ4At(variants[0], func(d int) Mem { return Mem{Base: w, Disp: d} }, buf)
}

// kScalesQ4At is kScalesQ4 for the block whose byte d is w(d), in the
// instructions variant v can encode.
func kScalesQ4At(v variant, w func(int) Mem, buf Mem) {
	u0, u1, u2 := GP32(), GP32(), GP32()
	MOVL(w(4), u0)
	MOVL(w(8), u1)
	MOVL(w(12), u2)
	// Scales and mins 4..7 take their low four bits from bytes 8..11 and
	// their top two bits from the top of bytes 0..3 (scales) or 4..7 (mins).
	sc47, m47, t := GP32(), GP32(), GP32()
	MOVL(u2, sc47)
	ANDL(U32(0x0f0f0f0f), sc47)
	MOVL(u0, t)
	SHRL(U8(2), t)
	ANDL(U32(0x30303030), t)
	ORL(t, sc47)
	MOVL(u2, m47)
	SHRL(U8(4), m47)
	ANDL(U32(0x0f0f0f0f), m47)
	MOVL(u1, t)
	SHRL(U8(2), t)
	ANDL(U32(0x30303030), t)
	ORL(t, m47)
	ANDL(U32(0x3f3f3f3f), u0)
	ANDL(U32(0x3f3f3f3f), u1)
	// Assemble in a register: four 4-byte stores read back as one 16-byte
	// load would defeat store forwarding.
	x := XMM()
	VMOVD(u0, x)
	VPINSRD(U8(1), sc47, x, x)
	VPINSRD(U8(2), u1, x, x)
	VPINSRD(U8(3), m47, x, x)
	wide := YMM()
	VPMOVZXBW(x, wide)
	if v.vnni {
		VMOVDQU64(wide, buf)
	} else {
		VMOVDQU(wide, buf)
	}
}

// minsQ4 returns eight int32 lanes m[k]·(bsum[2k]+bsum[2k+1]) from the
// words at buf (scales, then mins) and the Q8_K sums at a.
func minsQ4(buf Mem, a Register) VecVirtual {
	w := YMM()
	VMOVDQU(buf, w)
	lo, hi := YMM(), YMM()
	VPUNPCKLWD(w, w, lo)
	VPUNPCKHWD(w, w, hi)
	m2 := YMM()
	VPERM2I128(U8(0x31), hi, lo, m2) // m0,m0,m1,m1,… m7,m7
	VPMADDWD(Mem{Base: a, Disp: q8kSums}, m2, m2)
	return m2
}

// scaledPairs adds to sumi the products of the unsigned levels q with the
// 32 activations at am, times the int16 word at scale.
func scaledPairs(q VecVirtual, am, scale Mem, sumi VecVirtual) {
	p := YMM()
	VPMADDUBSW(am, q, p)
	s := YMM()
	VPBROADCASTW(scale, s)
	VPMADDWD(s, p, p)
	VPADDD(p, sumi, sumi)
}

// superScale returns the broadcast product of the binary16 at wd and the
// Q8_K float32 scale at a.
func superScale(wd Mem, a Register) VecVirtual {
	d := broadcastF16(wd)
	da := YMM()
	VBROADCASTSS(Mem{Base: a}, da)
	VMULPS(da, d, d)
	return d
}

func genDotQ4K(v variant, reg *registry) {
	if v.vnni {
		reg.dot(v, "TypeQ4_K", "dotQ4_KAVX2", "", 256)
		return
	}
	name := fname("dotQ4_K", v)
	TEXT(name, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(name + " returns the dot product of nb Q4_K super-blocks at w with Q8_K blocks at a.")
	buf := AllocLocal(32)
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	mask := broadcastByte(cLowNibble)
	acc := zeroed(1)[0]
	loopBlocks(nb, func() {
		kScalesQ4(w, buf)
		mins := minsQ4(buf, a)
		sumi := zeroed(1)[0]
		for j := 0; j < 4; j++ {
			q, lo := YMM(), YMM()
			VMOVDQU(Mem{Base: w, Disp: 16 + 32*j}, q)
			VPAND(mask, q, lo)
			VPSRLW(U8(4), q, q)
			VPAND(mask, q, q)
			scaledPairs(lo, Mem{Base: a, Disp: q8kQs + 64*j}, buf.Offset(4*j), sumi)
			scaledPairs(q, Mem{Base: a, Disp: q8kQs + 64*j + 32}, buf.Offset(4*j+2), sumi)
		}
		f := YMM()
		VCVTDQ2PS(sumi, f)
		VFMADD231PS(superScale(Mem{Base: w}, a), f, acc)
		VCVTDQ2PS(mins, f)
		VFNMADD231PS(superScale(Mem{Base: w, Disp: 2}, a), f, acc)
		ADDQ(U32(q4kBytes), w)
		ADDQ(U32(q8kBytes), a)
	})
	finishDot(acc)
	reg.dot(v, "TypeQ4_K", name, "", 256)
}

// q6Offset returns 32·Σ scale[s]·bsum[s] in eight int32 lanes: the part of
// Σ scale·(q−32)·a that the unsigned levels leave out.
func q6Offset(w, a Register) VecVirtual {
	s := YMM()
	VPMOVSXBW(Mem{Base: w, Disp: 192}, s)
	VPMADDWD(Mem{Base: a, Disp: q8kSums}, s, s)
	VPSLLD(U8(5), s, s)
	return s
}

// pairScale loads words buf[2g] and buf[2g+1] into the low and high halves
// of a ymm: the scales of the two 16-element sub-blocks one VPMADDUBSW covers.
func pairScale(buf Mem, g int) VecVirtual {
	s, h := YMM(), XMM()
	VPBROADCASTW(buf.Offset(4*g), s)
	VPBROADCASTW(buf.Offset(4*g+2), h)
	VINSERTI128(U8(1), h, s, s)
	return s
}

func genDotQ6K(v variant, reg *registry) {
	if v.vnni {
		reg.dot(v, "TypeQ6_K", "dotQ6_KAVX2", "", 256)
		return
	}
	name := fname("dotQ6_K", v)
	TEXT(name, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(name + " returns the dot product of nb Q6_K super-blocks at w with Q8_K blocks at a.")
	buf := AllocLocal(32)
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	mask, bits := broadcastByte(cLowNibble), broadcastByte(cBits2)
	acc := zeroed(1)[0]
	loopBlocks(nb, func() {
		sumi := YMM()
		VPXOR(sumi, sumi, sumi)
		for h := 0; h < 2; h++ {
			q6Half(w, a, h, buf, mask, bits, sumi)
		}
		VPSUBD(q6Offset(w, a), sumi, sumi)
		f := YMM()
		VCVTDQ2PS(sumi, f)
		VFMADD231PS(superScale(Mem{Base: w, Disp: 208}, a), f, acc)
		ADDQ(U32(q6kBytes), w)
		ADDQ(U32(q8kBytes), a)
	})
	finishDot(acc)
	reg.dot(v, "TypeQ6_K", name, "", 256)
}

// q6Half adds Σ scale·q·a over the 128 elements of half h, q the unsigned
// 6-bit level (q6Offset takes off the −32). The first half also widens the
// sixteen int8 scales to words at buf for pairScale.
func q6Half(w, a Register, h int, buf Mem, mask, bits, sumi VecVirtual) {
	if h == 0 {
		s := YMM()
		VPMOVSXBW(Mem{Base: w, Disp: 192}, s)
		VMOVDQU(s, buf)
	}
	ql := []VecVirtual{YMM(), YMM()}
	VMOVDQU(Mem{Base: w, Disp: 64 * h}, ql[0])
	VMOVDQU(Mem{Base: w, Disp: 64*h + 32}, ql[1])
	qh := YMM()
	VMOVDQU(Mem{Base: w, Disp: 128 + 32*h}, qh)
	for quarter := 0; quarter < 4; quarter++ {
		q, hi := YMM(), YMM()
		if quarter < 2 {
			VPAND(mask, ql[quarter], q)
		} else {
			VPSRLW(U8(4), ql[quarter-2], q)
			VPAND(mask, q, q)
		}
		switch shift := 4 - 2*quarter; {
		case shift > 0:
			VPSLLW(U8(shift), qh, hi)
		case shift < 0:
			VPSRLW(U8(-shift), qh, hi)
		default:
			VMOVDQA(qh, hi)
		}
		VPAND(bits, hi, hi)
		VPOR(hi, q, q)
		p := YMM()
		VPMADDUBSW(Mem{Base: a, Disp: q8kQs + 128*h + 32*quarter}, q, p)
		VPMADDWD(pairScale(buf, 4*h+quarter), p, p)
		VPADDD(p, sumi, sumi)
	}
}
