package main

import (
	"fmt"
	"math/bits"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Dot products of the ternary and lattice formats with Q8_K activations.
// AVX2 instructions only, shared by every variant; one row per call.

const (
	tq2Bytes    = 66
	iq2xxsBytes = 66
)

var (
	cThree  = ConstData("threeBytes", U8(3))
	cEighth = ConstData("f0_125", F32(0.125))
	// cIQ2XXSGrid holds iq2xxsGrid; cSignPM the ±1 bytes of every 7-bit
	// sign code (bit 7 the parity of the other seven: an even number of
	// minus signs, as quant's ksigns), llama.cpp's keven_signs_q2xs.
	cIQ2XXSGrid = u64Table("iq2xxsGrid", iq2xxsGrid[:])
	cSignPM     = u64Table("signPM", signPM())
)

func u64Table(name string, vals []uint64) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i, v := range vals {
		DATA(8*i, U64(v))
	}
	return m
}

func signPM() []uint64 {
	out := make([]uint64, 128)
	for c := range out {
		s := uint8(c) | uint8(bits.OnesCount8(uint8(c))&1)<<7
		for j := 0; j < 8; j++ {
			b := uint64(0x01)
			if s>>uint(j)&1 != 0 {
				b = 0xff // −1
			}
			out[c] |= b << (8 * uint(j))
		}
	}
	return out
}

// genDotTQ2 emits the TQ2_0·Q8_K dot product: the 2-bit fields t+1 (0–2)
// times the activations with VPMADDUBSW, summed in int16 (at most eight
// products of 2·2·127 per lane), minus the Q8_K block sums (Σ(t+1)·a − Σa
// = Σt·a). The lanes carry the +1 terms, which cancel only in total, so
// they are added as integers before the block's one float term: the
// result is quant.VecDot's, bit for bit (llama.cpp's AVX2 kernel scales
// the lanes, and rounds relative to those terms).
func genDotTQ2(v variant, reg *registry) {
	if v.vnni {
		reg.dot(v, "TypeTQ2_0", "dotTQ2_0AVX2", "", 256)
		return
	}
	name := fname("dotTQ2_0", v)
	TEXT(name, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(name + " returns the dot product of nb TQ2_0 blocks at w with Q8_K blocks at a.")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	three := broadcastByte(cThree)
	ones := YMM()
	VPBROADCASTW(cOnes16, ones)
	acc := XMM()
	VXORPS(acc, acc, acc)
	loopBlocks(nb, func() {
		s := zeroed(1)[0]
		for h := 0; h < 2; h++ {
			q := YMM()
			VMOVDQU(Mem{Base: w, Disp: 32 * h}, q)
			for l := 0; l < 4; l++ {
				f := YMM()
				if l == 0 {
					VPAND(three, q, f)
				} else {
					VPSRLW(U8(2*l), q, f)
					VPAND(three, f, f)
				}
				VPMADDUBSW(Mem{Base: a, Disp: q8kQs + 128*h + 32*l}, f, f)
				VPADDW(f, s, s)
			}
		}
		VPSUBW(Mem{Base: a, Disp: q8kSums}, s, s)
		VPMADDWD(ones, s, s)
		isum := hsumInt32(s)
		VCVTDQ2PS(isum, isum)
		d := superScale(Mem{Base: w, Disp: 64}, a)
		VMULSS(d.AsX(), isum, isum)
		VADDSS(isum, acc, acc)
		ADDQ(U32(tq2Bytes), w)
		ADDQ(U32(q8kBytes), a)
	})
	VZEROUPPER()
	Store(acc, ReturnIndex(0))
	RET()
	reg.dot(v, "TypeTQ2_0", name, "", 256)
}

// hsumInt32 adds the eight int32 lanes of y; the total is in lane 0 of
// the returned xmm.
func hsumInt32(y VecVirtual) VecVirtual {
	x, t := XMM(), XMM()
	VEXTRACTI128(U8(1), y, x)
	VPADDD(y.AsX(), x, x)
	VPSHUFD(U8(0x4e), x, t)
	VPADDD(t, x, x)
	VPSHUFD(U8(0xb1), x, t)
	VPADDD(t, x, x)
	return x
}

// genDotIQ2XXS emits the IQ2_XXS·Q8_K dot product as llama.cpp's AVX2
// kernel computes it: per 32-value sub-block the four lattice points
// (unsigned bytes) and the four sign patterns are fetched from the tables
// with scalar indices, the signs move onto the activations (VPSIGNB), and
// VPMADDUBSW then VPMADDWD by the sub-block scale 2s+1 give exact int32
// lanes; each block's lanes are scaled by d_w·d_a, the total by 1/8 (a
// power of two: exact, so before or after the lane sum is the same).
func genDotIQ2XXS(v variant, reg *registry) {
	if v.vnni {
		reg.dot(v, "TypeIQ2_XXS", "dotIQ2_XXSAVX2", "", 256)
		return
	}
	name := fname("dotIQ2_XXS", v)
	TEXT(name, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(name + " returns the dot product of nb IQ2_XXS blocks at w with Q8_K blocks at a.")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	grid, signs := GP64(), GP64()
	LEAQ(cIQ2XXSGrid, grid)
	LEAQ(cSignPM, signs)
	acc := zeroed(1)[0]
	loopBlocks(nb, func() {
		sumi := zeroed(1)[0]
		for ib := 0; ib < 8; ib++ {
			codes := GP64()
			MOVL(Mem{Base: w, Disp: 2 + 8*ib + 4}, codes.As32())
			q := gatherBytes(grid, Mem{Base: w, Disp: 2 + 8*ib})
			s := gather4(signs, codes, 7, 0x7f)
			act := YMM()
			VMOVDQU(Mem{Base: a, Disp: q8kQs + 32*ib}, act)
			VPSIGNB(s, act, act)
			VPMADDUBSW(act, q, q)
			// The scale 2s+1 from the top four bits of the codes word.
			sc := GP32()
			MOVL(Mem{Base: w, Disp: 2 + 8*ib + 4}, sc)
			SHRL(U8(28), sc)
			LEAL(Mem{Base: sc, Index: sc, Scale: 1, Disp: 1}, sc)
			x := XMM()
			VMOVD(sc, x)
			sy := YMM()
			VPBROADCASTW(x, sy)
			VPMADDWD(sy, q, q)
			VPADDD(q, sumi, sumi)
		}
		f := YMM()
		VCVTDQ2PS(sumi, f)
		VFMADD231PS(superScale(Mem{Base: w}, a), f, acc)
		ADDQ(U32(iq2xxsBytes), w)
		ADDQ(U32(q8kBytes), a)
	})
	eighth := YMM()
	VBROADCASTSS(cEighth, eighth)
	VMULPS(eighth, acc, acc)
	finishDot(acc)
	reg.dot(v, "TypeIQ2_XXS", name, "", 256)
}

// gatherBytes loads the four uint64 table entries indexed by the four
// bytes at m into the four qwords of a ymm.
func gatherBytes(table Register, m Mem) VecVirtual {
	var q [4]GPVirtual
	for k := range q {
		q[k] = GP64()
		MOVBQZX(m.Offset(k), q[k])
	}
	return insert4(table, q)
}

// gather4 loads the four uint64 table entries whose indices are fields of
// `shift` bits (masked by mask) of the register codes, lowest field first,
// into the four qwords of a ymm. codes is consumed.
func gather4(table Register, codes GPVirtual, shift int, mask uint32) VecVirtual {
	var q [4]GPVirtual
	for k := range q {
		q[k] = GP64()
		MOVL(codes.As32(), q[k].As32())
		if k > 0 {
			SHRL(U8(shift*k), q[k].As32())
		}
		ANDL(U32(mask), q[k].As32())
	}
	return insert4(table, q)
}

// insert4 loads table[q[0]] … table[q[3]] into the qwords of a ymm.
func insert4(table Register, q [4]GPVirtual) VecVirtual {
	lo, hi := XMM(), XMM()
	VMOVQ(Mem{Base: table, Index: q[0], Scale: 8}, lo)
	VPINSRQ(U8(1), Mem{Base: table, Index: q[1], Scale: 8}, lo, lo)
	VMOVQ(Mem{Base: table, Index: q[2], Scale: 8}, hi)
	VPINSRQ(U8(1), Mem{Base: table, Index: q[3], Scale: 8}, hi, hi)
	y := YMM()
	VINSERTI128(U8(1), hi, lo.AsY(), y)
	return y
}

const iq3sBytes = 110

var (
	cIQ3SGrid = u32Table("iq3sGrid", iq3sGrid[:])
	// cBitShifts: VPSLLVD counts that move bit k of a broadcast byte to
	// bit 8 of dword k; cBit8 masks it.
	cBitShifts = u32Table("bitShifts8", []uint32{8, 7, 6, 5, 4, 3, 2, 1})
	cBit8      = ConstData("bit8", U32(256))
	// cSignSpread: VPSHUFB control that repeats sign byte k (of the four
	// broadcast in each 128-bit half) over values 8k…8k+7; cSignBits
	// picks bit j of value j's byte.
	cSignSpread = u8Table("signSpread", []uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
		2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3})
	cSignBits = u8Table("signBits", []uint8{1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
		1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128})
	cOneBytes = ConstData("oneBytes", U8(1))
)

func u32Table(name string, vals []uint32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i, v := range vals {
		DATA(4*i, U32(v))
	}
	return m
}

func u8Table(name string, vals []uint8) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i, v := range vals {
		DATA(i, U8(v))
	}
	return m
}

// genDotIQ3S emits the IQ3_S·Q8_K dot product. Per 32-value sub-block:
// the eight 9-bit grid indices (a byte of qs, bit k of the sub-block's qh
// byte on top) are formed in a vector and parked on the stack, the eight
// 4-byte points loaded by scalar index (llama.cpp found AVX2 gathers
// slower on Zen 4), the sign bits spread to ±1 bytes (VPSHUFB, VPAND,
// VPCMPEQB) and moved onto the activations with VPSIGNB; VPMADDUBSW and
// VPMADDWD by the scale 2s+1 give exact int32 lanes, scaled by d_w·d_a per
// block.
func genDotIQ3S(v variant, reg *registry) {
	if v.vnni {
		reg.dot(v, "TypeIQ3_S", "dotIQ3_SAVX2", "", 256)
		return
	}
	name := fname("dotIQ3_S", v)
	TEXT(name, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(name + " returns the dot product of nb IQ3_S blocks at w with Q8_K blocks at a.")
	buf := AllocLocal(32)
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	grid := GP64()
	LEAQ(cIQ3SGrid, grid)
	shifts, bit8 := YMM(), YMM()
	VMOVDQU(cBitShifts, shifts)
	VPBROADCASTD(cBit8, bit8)
	spread, bitsel, one := YMM(), YMM(), YMM()
	VMOVDQU(cSignSpread, spread)
	VMOVDQU(cSignBits, bitsel)
	VPBROADCASTB(cOneBytes, one)
	acc := zeroed(1)[0]
	loopBlocks(nb, func() {
		sumi := zeroed(1)[0]
		for ib := 0; ib < 8; ib++ {
			// Indices: qs bytes widened to dwords | qh bit k at bit 8.
			idx, hb := YMM(), YMM()
			VPMOVZXBD(Mem{Base: w, Disp: 2 + 8*ib}, idx)
			VPBROADCASTB(Mem{Base: w, Disp: 66 + ib}, hb)
			VPSLLVD(shifts, hb, hb)
			VPAND(bit8, hb, hb)
			VPOR(hb, idx, idx)
			VMOVDQU(idx, buf)
			q := loadPoints(grid, buf)
			// Signs: byte k of the four at 74+4ib covers values 8k…8k+7.
			s := YMM()
			VPBROADCASTD(Mem{Base: w, Disp: 74 + 4*ib}, s)
			VPSHUFB(spread, s, s)
			VPAND(bitsel, s, s)
			VPCMPEQB(bitsel, s, s) // −1 where the sign bit is set
			VPOR(one, s, s)        // else +1
			act := YMM()
			VMOVDQU(Mem{Base: a, Disp: q8kQs + 32*ib}, act)
			VPSIGNB(s, act, act)
			VPMADDUBSW(act, q, q)
			sc := GP32()
			MOVBLZX(Mem{Base: w, Disp: 106 + ib/2}, sc)
			if ib%2 == 1 {
				SHRL(U8(4), sc)
			}
			ANDL(U32(0xf), sc)
			LEAL(Mem{Base: sc, Index: sc, Scale: 1, Disp: 1}, sc)
			x := XMM()
			VMOVD(sc, x)
			sy := YMM()
			VPBROADCASTW(x, sy)
			VPMADDWD(sy, q, q)
			VPADDD(q, sumi, sumi)
		}
		f := YMM()
		VCVTDQ2PS(sumi, f)
		VFMADD231PS(superScale(Mem{Base: w}, a), f, acc)
		ADDQ(U32(iq3sBytes), w)
		ADDQ(U32(q8kBytes), a)
	})
	finishDot(acc)
	reg.dot(v, "TypeIQ3_S", name, "", 256)
}

// loadPoints loads grid[buf[0]] … grid[buf[7]] (uint32 entries, indices
// as dwords at buf) into the eight dwords of a ymm.
func loadPoints(grid Register, buf Mem) VecVirtual {
	var r [8]GPVirtual
	for k := range r {
		r[k] = GP64()
		MOVL(buf.Offset(4*k), r[k].As32())
	}
	lo, hi := XMM(), XMM()
	VMOVD(Mem{Base: grid, Index: r[0], Scale: 4}, lo)
	VMOVD(Mem{Base: grid, Index: r[4], Scale: 4}, hi)
	for k := 1; k < 4; k++ {
		VPINSRD(U8(k), Mem{Base: grid, Index: r[k], Scale: 4}, lo, lo)
		VPINSRD(U8(k), Mem{Base: grid, Index: r[4+k], Scale: 4}, hi, hi)
	}
	y := YMM()
	VINSERTI128(U8(1), hi, lo.AsY(), y)
	return y
}

const q5kBytes = 176

// genDotQ5K emits the Q5_K·Q8_K dot product: genDotQ4K's kernel with each
// 32-value sub-block's fifth bits (bit j of the 32 qh bytes for sub-block
// j) moved to bit 4 of the nibbles. The 5-bit levels keep VPMADDUBSW's
// pair sums within int16 (2·31·127).
func genDotQ5K(v variant, reg *registry) {
	if v.vnni {
		reg.dot(v, "TypeQ5_K", "dotQ5_KAVX2", "", 256)
		return
	}
	name := fname("dotQ5_K", v)
	TEXT(name, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(name + " returns the dot product of nb Q5_K super-blocks at w with Q8_K blocks at a.")
	buf := AllocLocal(32)
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	mask := broadcastByte(cLowNibble)
	bit4 := broadcastByte(cBit4)
	acc := zeroed(1)[0]
	loopBlocks(nb, func() {
		kScalesQ4(w, buf)
		mins := minsQ4(buf, a)
		qh := YMM()
		VMOVDQU(Mem{Base: w, Disp: 16}, qh)
		sumi := zeroed(1)[0]
		for j := 0; j < 4; j++ {
			q, lo := YMM(), YMM()
			VMOVDQU(Mem{Base: w, Disp: 48 + 32*j}, q)
			VPAND(mask, q, lo)
			VPSRLW(U8(4), q, q)
			VPAND(mask, q, q)
			VPOR(fifthBits(qh, 2*j, bit4), lo, lo)
			VPOR(fifthBits(qh, 2*j+1, bit4), q, q)
			scaledPairs(lo, Mem{Base: a, Disp: q8kQs + 64*j}, buf.Offset(4*j), sumi)
			scaledPairs(q, Mem{Base: a, Disp: q8kQs + 64*j + 32}, buf.Offset(4*j+2), sumi)
		}
		f := YMM()
		VCVTDQ2PS(sumi, f)
		VFMADD231PS(superScale(Mem{Base: w}, a), f, acc)
		VCVTDQ2PS(mins, f)
		VFNMADD231PS(superScale(Mem{Base: w, Disp: 2}, a), f, acc)
		ADDQ(U32(q5kBytes), w)
		ADDQ(U32(q8kBytes), a)
	})
	finishDot(acc)
	reg.dot(v, "TypeQ5_K", name, "", 256)
}

var cBit4 = ConstData("bit4Bytes", U8(0x10))

// fifthBits returns bit k of every byte of qh moved to bit 4. Word shifts
// carry bits across bytes, but never into bit 4 of a byte.
func fifthBits(qh VecVirtual, k int, bit4 VecVirtual) VecVirtual {
	h := YMM()
	switch {
	case k < 4:
		VPSLLW(U8(4-k), qh, h)
	case k > 4:
		VPSRLW(U8(k-4), qh, h)
	default:
		VMOVDQA(qh, h)
	}
	VPAND(bit4, h, h)
	return h
}

const q2kBytes = 84

// cQ2Pair[h][l] is the VPSHUFB control that widens scale byte 8h+2l to the
// words of the lower 128-bit half and byte 8h+2l+1 to those of the upper
// (the scale bytes broadcast to both halves): the scales of the two
// 16-value groups of 32-value chunk (h, l).
var cQ2Pair = q2PairControls()

func q2PairControls() (c [2][4]Mem) {
	for h := 0; h < 2; h++ {
		for l := 0; l < 4; l++ {
			c[h][l] = GLOBL(fmt.Sprintf("q2kPair%d%d", h, l), RODATA|NOPTR)
			for i := 0; i < 32; i += 2 {
				b := 8*h + 2*l
				if i >= 16 {
					b++
				}
				DATA(i, U8(b))
				DATA(i+1, U8(0x80)) // zero: the high byte of the word
			}
		}
	}
	return c
}

// genDotQ2K emits the Q2_K·Q8_K dot product with quant.VecDot's arithmetic:
// per block the integer sums Σscale·q·a (VPMADDUBSW of the 2-bit levels,
// VPMADDWD by each 16-value group's 4-bit scale) and Σmin·bsum (the Q8_K
// group sums times the 4-bit mins) are reduced to two integers, then
// d_a·d_w·isum − d_a·d_min·summs is added in float32 as ggml's generic
// kernel does: bit-identical to quant.VecDot.
func genDotQ2K(v variant, reg *registry) {
	if v.vnni {
		reg.dot(v, "TypeQ2_K", "dotQ2_KAVX2", "", 256)
		return
	}
	name := fname("dotQ2_K", v)
	TEXT(name, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(name + " returns the dot product of nb Q2_K blocks at w with Q8_K blocks at a.")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	three, nib := broadcastByte(cThree), broadcastByte(cLowNibble)
	acc := XMM()
	VXORPS(acc, acc, acc)
	loopBlocks(nb, func() {
		sc := YMM()
		VBROADCASTI128(Mem{Base: w}, sc)
		// Mins: the high nibbles widened to words against the 16 group sums.
		mins := YMM()
		VPMOVZXBW(Mem{Base: w}, mins)
		VPSRLW(U8(4), mins, mins)
		VPMADDWD(Mem{Base: a, Disp: q8kSums}, mins, mins)
		VPAND(nib, sc, sc)
		sumi := zeroed(1)[0]
		for h := 0; h < 2; h++ {
			q := YMM()
			VMOVDQU(Mem{Base: w, Disp: 16 + 32*h}, q)
			for l := 0; l < 4; l++ {
				f := YMM()
				if l == 0 {
					VPAND(three, q, f)
				} else {
					VPSRLW(U8(2*l), q, f)
					VPAND(three, f, f)
				}
				VPMADDUBSW(Mem{Base: a, Disp: q8kQs + 128*h + 32*l}, f, f)
				s := YMM()
				VPSHUFB(cQ2Pair[h][l], sc, s)
				VPMADDWD(s, f, f)
				VPADDD(f, sumi, sumi)
			}
		}
		isum, summs := hsumInt32(sumi), hsumInt32(mins)
		VCVTDQ2PS(isum, isum)
		VCVTDQ2PS(summs, summs)
		da := XMM()
		VMOVSS(Mem{Base: a}, da)
		dall, dmin := broadcastF16(Mem{Base: w, Disp: 80}).AsX(), broadcastF16(Mem{Base: w, Disp: 82}).AsX()
		VMULSS(dall, da, dall) // d_a·d (ggml's yd·d, the same product)
		VMULSS(dmin, da, dmin)
		VMULSS(isum, dall, dall)
		VMULSS(summs, dmin, dmin)
		VSUBSS(dmin, dall, dall)
		VADDSS(dall, acc, acc)
		ADDQ(U32(q2kBytes), w)
		ADDQ(U32(q8kBytes), a)
	})
	VZEROUPPER()
	Store(acc, ReturnIndex(0))
	RET()
	reg.dot(v, "TypeQ2_K", name, "", 256)
}
