package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Tiled flash attention (backends/cpu flash.go): one query head's online
// softmax over a tile of cells whose weights are known, with the
// accumulator held in registers from cell to cell.
//
// flashTile<V>x<H> applies, for each cell j in order, ops/ref's update of
// a block of columns of H heads' accumulators and running sums. A cell's
// weight e comes signed (simd.FlashExp): positive, the cell raised the
// maximum and (ms, vs) = (e, 1): acc·ms (ggml_vec_scale, rounded to
// binary16 with an f16 V) and sum·ms; negative, (ms, vs) = (1, −e) and
// no scaling (ref scales only on a raise; by 1 it would be an identity).
// Then fma(v_j, vs, acc) (ggml_vec_mad, likewise rounded) and sum + vs
// (unfused, as ggml's ISO C build). Both take the negated weight w = −vs
// (−1 or e): VFNMADD gives −(w·v) + acc, the same single rounding, and
// sum − w is sum + vs exactly. Quantized V rows are widened as
// quant.Dequantize does: d·q in float32, which is exact (an 11-bit
// significand times an integer below 2⁸). Kind F16F32 reads a binary16 V
// and keeps a float32 accumulator (ref.AttnOptions.F32Acc: no rounding
// to binary16), as the quantized kinds do; F32 and F32H read float32 V
// rows (binary16 or quantized rows widened exactly beforehand) into
// float32 and binary16 accumulators.
//
// flashExp is ±float32(exp(float64(−|x|))), the reference's expf of
// −|x| carrying x's sign (the tiles' encoding of a cell weight, see
// simd.FlashExp), computed in double precision. On AVX2 (fexpQuarter,
// four doubles a ymm): x = n·ln2 + r, |r| ≤ ln2/2, exp(r) by its Taylor
// polynomial to r¹¹ (truncation below 2⁻⁴⁶, far below a float32 ulp),
// then ·2ⁿ and one rounding to float32; on AVX-512 (fexpSixteen, eight
// doubles a zmm) the reduction is by ln2/16 with a table of 2^(j/16) and
// the polynomial stops at r⁶ (see there). Two results can
// round differently only when the double lies near a float32 rounding
// boundary, so any lane whose double is within 2¹⁰ double ulps of one
// (or whose |x| is outside [0, 87], where float32 results may be
// subnormal, or NaN; +∞ excepted, whose weight is 0) flags its group of
// 16 for the caller to recompute with the scalar function. Every float32
// of [−87, 0] has been checked against it (TestFlashExpDense).

// flashPrefetchCells is how many cells ahead the tile kernels prefetch V
// rows: a decode token at depth reads each layer's cache from memory, and
// the kernel consumes a row every few dozen cycles, so the rows must be
// asked for some hundreds of cycles early. BenchmarkDecodeAttentionDeep
// (22 layers at depth 16383, one worker): 4 cells 115–122 ms a token, 8
// 114, 16–32 95–106, 48–64 100–104 (binary16 accumulator); the float32
// one 75–83 → 69–75.
const flashPrefetchCells = 32

// fexpGuard is the half-width, in double ulps, of the band around float32
// rounding boundaries that sends a group to the scalar path.
const fexpGuard = 1 << 10

var (
	cFExpLog2e = constF64("fexpLog2e", 0x1.71547652b82fep0)
	cFExpShift = constF64("fexpShift", 0x1.8p52)
	cFExpLn2Hi = constF64("fexpLn2Hi", 0x1.62e42feep-1)
	cFExpLn2Lo = constF64("fexpLn2Lo", 0x1.a39ef35793c76p-33)
	cFExpCoef  = fexpCoefs()
	// fexpSixteen's: the reduction by ln2/16, the table, the exponent
	// field and the band test's add and mask (bits 11–28).
	cFExpLog2e16  = constF64("fexpLog2e16", 0x1.71547652b82fep4)
	cFExpLn2Hi16  = constF64("fexpLn2Hi16", 0x1.62e42feep-5)
	cFExpLn2Lo16  = constF64("fexpLn2Lo16", 0x1.a39ef35793c76p-37)
	cFExp2Table   = fexp2Table()
	cFExpHighMask = constU64("fexpHighMask", 0xfff0000000000000)
	cFExpBandAdd  = constU64("fexpBandAdd", 1<<28+fexpGuard)
	cFExpBandMask = constU64("fexpBandMask", (1<<29-1)&^(2*fexpGuard-1))
	cFExpLow29    = constU64("fexpLow29", 1<<29-1)
	cFExpBandLo   = constU64("fexpBandLo", 1<<28-fexpGuard)
	cFExpMinus1   = constU64("fexpMinus1", math.MaxUint64)
	cFExpBandW    = constU64("fexpBandW", 2*fexpGuard+1)
	cFExpMin      = constF32("fexpMin", -87)
	cFExpSign     = constVec("fexpSign", 0x80000000)
	cFExpNegInf   = constF32("fexpNegInf", float32(math.Inf(-1)))
	cFlashNegOne  = constF32("flashNegOne", -1)
	cNibMask      = constVec("flashNibMask", 0x0f)
	cEightD       = constVec("flashEightD", 8)
)

// constF64 emits four copies of v.
func constF64(name string, v float64) Mem { return constU64(name, math.Float64bits(v)) }

// constU64 emits four copies of a 64-bit pattern.
func constU64(name string, bits uint64) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 4; i++ {
		DATA(8*i, U64(bits))
	}
	return m
}

// fexpCoefs emits 1/k! for k = 0…11, four copies each, 32 bytes apart.
func fexpCoefs() Mem {
	m := GLOBL("fexpCoef", RODATA|NOPTR)
	f := 1.0
	for k := 0; k <= 11; k++ {
		if k > 0 {
			f *= float64(k)
		}
		for i := 0; i < 4; i++ {
			DATA(32*k+8*i, U64(math.Float64bits(1/f)))
		}
	}
	return m
}

// fexp2Table emits 2^(j/16) for j = 0…15, each the double nearest it.
func fexp2Table() Mem {
	m := GLOBL("fexp2Table", RODATA|NOPTR)
	for j := 0; j < 16; j++ {
		DATA(8*j, U64(math.Float64bits(math.Exp2(float64(j)/16))))
	}
	return m
}

// flashKinds are the tile kernels' kinds, in simd's flashKind order: the
// V row type and the accumulator. F16, Q8_0, Q4_0 as ggml (a binary16
// accumulator with a binary16 V, float32 with a quantized one); F16F32, a
// binary16 V and a float32 accumulator (ref.AttnOptions.F32Acc); F32 and
// F32H, V rows already widened to float32 (a tile's rows converted once
// for many heads) with a float32 or a binary16 accumulator.
var flashKinds = [...]string{"F16", "Q8_0", "Q4_0", "F16F32", "F32", "F32H"}

// genFlashTiles emits the tile kernels of variant v and, once, flashExp.
func genFlashTiles(v variant, reg *registry) {
	exp := fname("flashExp", v)
	genFlashExp(v, exp)
	var tiles, tails [len(flashKinds)][]string
	for i, kind := range flashKinds {
		for h := 1; h <= flashTileHeads(v); h++ {
			tiles[i] = append(tiles[i], genFlashTile(v, kind, h, 4, true))
			if kind != "Q8_0" && kind != "Q4_0" { // whole 32-value blocks: no tail
				tails[i] = append(tails[i], genFlashTile(v, kind, h, 1, false))
			}
		}
	}
	reg.flashTiles(v, exp, tiles)
	reg.flashTails(v, tails)
}

func genFlashExp(v variant, name string) {
	TEXT(name, NOSPLIT, "func(ng int, x *float32, dst *float32) uint64")
	Doc(name+" sets dst[i] = ±float32(exp(float64(−|x[i]|))), with x[i]'s sign, for",
		"ng ≤ 64 groups of 16 floats; bit g of the result is set where group g must",
		"be recomputed (a lane near a rounding boundary or with |x| outside [0, 87]).")
	ng := Load(Param("ng"), GP64())
	x := Load(Param("x"), GP64())
	dst := Load(Param("dst"), GP64())
	res, bit := GP64(), GP64()
	XORQ(res, res)
	MOVQ(U32(1), bit)
	var tbl VecVirtual
	if v.vnni {
		tbl = ZMM()
		VMOVUPD(cFExp2Table, tbl) // 2^(j/16), j < 8 (j ≥ 8 read from memory)
	}
	loopBlocks(ng, func() {
		flags := GP32()
		XORL(flags, flags)
		if v.vnni {
			fexpSixteen(Mem{Base: x}, Mem{Base: dst}, flags, tbl)
		} else {
			for q := 0; q < 4; q++ {
				fexpQuarter(Mem{Base: x, Disp: 16 * q}, Mem{Base: dst, Disp: 16 * q}, flags)
			}
		}
		TESTL(flags, flags)
		JZ(LabelRef("clean"))
		ORQ(bit, res)
		Label("clean")
		SHLQ(U8(1), bit)
		ADDQ(U32(64), x)
		ADDQ(U32(64), dst)
	})
	Store(res, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// fexpQuarter computes four lanes, ORing a nonzero value into flags when
// one of them needs the scalar path.
func fexpQuarter(src, dst Mem, flags Register) {
	in, sign, xf := XMM(), XMM(), XMM()
	VMOVUPS(src, in)
	VANDPS(cFExpSign, in, sign)
	VORPS(cFExpSign, in, xf) // −|x|
	ge, inf := XMM(), XMM()
	VCMPPS(U8(0x1d), cFExpMin, xf, ge)     // −|x| ≥ −87 (false for NaN)
	VCMPPS(U8(0x00), cFExpNegInf, xf, inf) // −|x| = −∞: exp is 0
	VORPS(inf, ge, inf)
	m := GP32()
	VMOVMSKPS(inf, m)
	XORL(U32(0xf), m)
	ORL(m, flags)

	xd := YMM()
	VCVTPS2PD(xf, xd)
	z := YMM()
	VMOVUPD(cFExpShift, z)
	VFMADD231PD(cFExpLog2e, xd, z) // z = x·log2e + shift: n in its low bits
	n := YMM()
	VSUBPD(cFExpShift, z, n)
	r := YMM()
	VMOVAPD(xd, r)
	VFNMADD231PD(cFExpLn2Hi, n, r)
	VFNMADD231PD(cFExpLn2Lo, n, r)
	p := YMM()
	VMOVUPD(cFExpCoef.Offset(32*11), p)
	for k := 10; k >= 0; k-- {
		VFMADD213PD(cFExpCoef.Offset(32*k), r, p) // p = p·r + 1/k!
	}
	e := YMM()
	VPSLLQ(U8(52), z, e)
	VPADDQ(e, p, p) // ·2ⁿ: n ≥ −126 keeps the double normal
	f := XMM()
	VCVTPD2PSY(p, f)
	VANDPS(ge, f, f) // 0 for −∞ (other lanes out of range are flagged)
	VORPS(sign, f, f)
	VMOVUPS(f, dst)
	// Flag |low29(p) − 2²⁸| ≤ guard: w = low29 − (2²⁸ − guard) in [0, 2·guard].
	w := YMM()
	VPAND(cFExpLow29, p, w)
	VPSUBQ(cFExpBandLo, w, w)
	a, b := YMM(), YMM()
	VPCMPGTQ(cFExpMinus1, w, a) // w > −1
	VMOVDQU(cFExpBandW, b)
	VPCMPGTQ(w, b, b) // 2·guard+1 > w
	VPAND(a, b, a)
	m2 := GP32()
	VMOVMSKPD(a, m2)
	ORL(m2, flags)
}

// fexpSixteen is fexpQuarter for a group of 16 lanes on AVX-512, with a
// shorter polynomial: x = m·ln2/16 + r, |r| ≤ ln2/32, exp(x) = 2^⌊m/16⌋ ·
// 2^((m mod 16)/16) · exp(r), the sixteen powers 2^(j/16) a two-register
// table (VPERMI2PD indexes it by m's low four bits, which the shifted
// product leaves in the double's low bits), exp(r) by its Taylor
// polynomial to r⁶ (truncation below 2⁻⁵¹: with the table's and the
// products' roundings a few double ulps, far inside the 2¹⁰-ulp guard
// band). The range test runs on all 16 floats at once into a mask, which
// also zeroes the −∞ lanes, and the band test is one add and one test
// under a mask: (low29 + 2²⁸ + guard) mod 2²⁹ < 2·guard ⇔ |low29 − 2²⁸|
// within the guard (its upper end excluded: the band stays far wider than
// the error). tbl holds the table's first eight entries.
func fexpSixteen(src, dst Mem, flags Register, tbl VecVirtual) {
	x, xf := ZMM(), ZMM()
	VMOVUPS(src, x)
	VPORD_BCST(cFExpSign, x, xf) // −|x|
	ge, ninf, bad := K(), K(), K()
	VCMPPS_BCST(U8(0x1d), cFExpMin, xf, ge)      // −|x| ≥ −87 (false for NaN)
	VCMPPS_BCST(U8(0x04), cFExpNegInf, xf, ninf) // −|x| ≠ −∞ (true for NaN)
	KANDNW(ninf, ge, bad)                        // out of range, not −∞
	hi := YMM()
	VEXTRACTF32X8(U8(1), xf, hi)
	lo, out := fexpEight(xf.AsY(), bad, tbl), ZMM()
	f := fexpEight(hi, bad, tbl)
	VINSERTF32X8_Z(U8(1), f.AsY(), lo, ge, out)  // −∞ (and flagged) lanes 0
	VPTERNLOGD_BCST(U8(0xf8), cFExpSign, x, out) // out | (x & sign)
	VMOVUPS(out, dst)
	m := GP32()
	KMOVW(bad, m)
	ORL(m, flags)
}

// fexpEight computes eight lanes of fexpSixteen from the floats y (−|x|),
// returning the float32 results in the low half of a zmm and ORing the
// lanes near a rounding boundary into the mask bad.
func fexpEight(y, bad Register, tbl VecVirtual) VecVirtual {
	xd := ZMM()
	VCVTPS2PD(y, xd)
	z := ZMM()
	VBROADCASTSD(cFExpShift, z)
	VFMADD231PD_BCST(cFExpLog2e16, xd, z) // z = x·16·log2e + shift: m in its low bits
	n := ZMM()
	VSUBPD_BCST(cFExpShift, z, n)
	VFNMADD231PD_BCST(cFExpLn2Hi16, n, xd) // r, in xd
	VFNMADD231PD_BCST(cFExpLn2Lo16, n, xd)
	p := ZMM()
	VBROADCASTSD(cFExpCoef.Offset(32*6), p)
	for k := 5; k >= 0; k-- {
		VFMADD213PD_BCST(cFExpCoef.Offset(32*k), xd, p) // p = p·r + 1/k!
	}
	e := ZMM()
	VPSLLQ(U8(48), z, e) // m's low 16 bits at the top
	VPANDQ_BCST(cFExpHighMask, e, e)
	// ⌊m/16⌋ in the exponent field (mod 2¹²; the result stays normal)
	VPERMI2PD(cFExp2Table.Offset(64), tbl, z) // z = 2^((m mod 16)/16)
	VMULPD(z, p, p)
	VPADDQ(e, p, p)
	f := ZMM()
	VCVTPD2PS(p, f.AsY())
	w, k := ZMM(), K()
	VPADDQ_BCST(cFExpBandAdd, p, w)
	VPTESTNMQ_BCST(cFExpBandMask, w, k)
	KORW(k, bad, bad)
	return f
}

// flashTileLanes is the float count of one vector of variant v.
func flashTileLanes(v variant) int {
	if v.vnni {
		return 16
	}
	return 8
}

// flashTileHeads is the most heads one tile kernel of v updates together:
// each head's accumulator is a dependency chain (multiply-add, then the
// binary16 round trip) from cell to cell, so several heads side by side
// keep the vector units busy, and each widened V chunk serves them all.
// A head takes 4 registers of accumulator besides its weight and sum.
func flashTileHeads(v variant) int {
	if v.vnni {
		return 4
	}
	return 2
}

// genFlashTile emits flashTile<kind>x<heads>: n cells' updates of heads
// accumulator blocks of vecs vectors (4: 64 floats on AVX-512, 32 on
// AVX2; see above), V rows vStride bytes apart. Head h's accumulator is at
// acc + h·accStride bytes, its running sum at sum[h], its signed weights
// at e + 4·h·eStride. Unfused (flashTail<kind>x<heads>, one vector), the
// multiply-add is a multiply and an add, each rounded: ggml's scalar tail
// of ggml_vec_mad_f16 past its last whole 64-value block (ISO C, no
// contraction), x·w rounded and then subtracted, −(x·w) being x·vs
// exactly.
func genFlashTile(v variant, kind string, heads, vecs int, fused bool) string {
	name := fname(fmt.Sprintf("flashTile%sx%d", kind, heads), v)
	if !fused {
		name = fname(fmt.Sprintf("flashTail%sx%d", kind, heads), v)
	}
	lanes := flashTileLanes(v)
	vec := func() VecVirtual {
		if lanes == 16 {
			return ZMM()
		}
		return YMM()
	}
	TEXT(name, NOSPLIT, "func(n int, acc *float32, accStride int, v *byte, vStride int, e *float32, eStride int, sum *float32)")
	Doc(fmt.Sprintf("%s applies n cells' online-softmax updates to %d floats of the", name, vecs*lanes),
		fmt.Sprintf("accumulators and the sums of %d heads from %s V rows (ops/ref.FlashScale, FlashMad).", heads, kind))
	n := Load(Param("n"), GP64())
	accP := Load(Param("acc"), GP64())
	vp := Load(Param("v"), GP64())
	stride := Load(Param("vStride"), GP64())
	es := pointers("e", "eStride", heads)
	sumP := Load(Param("sum"), GP64())
	accs := make([][]VecVirtual, heads)
	sums := make([]VecVirtual, heads)
	accStride := Load(Param("accStride"), GP64())
	for h := range accs {
		if h > 0 {
			ADDQ(accStride, accP)
		}
		for i := 0; i < vecs; i++ {
			a := vec()
			VMOVUPS(Mem{Base: accP, Disp: 4 * lanes * i}, a)
			accs[h] = append(accs[h], a)
		}
		sums[h] = XMM()
		VMOVSS(Mem{Base: sumP, Disp: 4 * h}, sums[h])
	}
	half := kind == "F16" || kind == "F32H" // a binary16 accumulator
	round := func(a VecVirtual) {
		if !half {
			return
		}
		var hv VecVirtual
		if lanes == 16 {
			hv = YMM()
		} else {
			hv = XMM()
		}
		VCVTPS2PH(U8(0), a, hv)
		VCVTPH2PS(hv, a)
	}
	var mask, eight VecVirtual
	if kind == "Q4_0" && lanes == 16 {
		mask, eight = vec(), vec()
		VPBROADCASTD(cNibMask, mask)
		VPBROADCASTD(cEightD, eight)
	}
	pf := GP64()
	IMUL3Q(U32(flashPrefetchCells), stride, pf)
	ADDQ(vp, pf)
	j := GP64()
	XORQ(j, j)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("cell")
	wv := make([]VecVirtual, heads)
	for h, ep := range es {
		em := Mem{Base: ep, Index: j, Scale: 4}
		wv[h] = vec()
		VBROADCASTSS(em, wv[h])
		m := GP32()
		MOVL(em, m)
		TESTL(m, m)
		next := fmt.Sprintf("weighted%d", h)
		JS(LabelRef(next))
		for _, a := range accs[h] {
			VMULPS(wv[h], a, a)
			round(a)
		}
		VMULSS(em, sums[h], sums[h])
		VBROADCASTSS(cFlashNegOne, wv[h])
		Label(next)
		VSUBSS(wv[h].AsX(), sums[h], sums[h])
	}
	var d VecVirtual
	for i := 0; i < vecs; i++ {
		x := vec()
		col := lanes * i
		switch kind {
		case "F16", "F16F32":
			VCVTPH2PS(Mem{Base: vp, Disp: 2 * col}, x)
		case "F32", "F32H":
			VMOVUPS(Mem{Base: vp, Disp: 4 * col}, x)
		default:
			bb := 34
			if kind == "Q4_0" {
				bb = 18
			}
			blk, o := col/32, col%32
			if o == 0 {
				d = flashScale(Mem{Base: vp, Disp: bb * blk}, lanes)
			}
			if kind == "Q8_0" {
				VPMOVSXBD(Mem{Base: vp, Disp: bb*blk + 2 + o}, x)
			} else {
				VPMOVZXBD(Mem{Base: vp, Disp: bb*blk + 2 + o%16}, x)
				if o < 16 {
					nibbleOp(lanes, mask, cNibMask, x, pandD)
				} else {
					VPSRLD(U8(4), x, x)
				}
				nibbleOp(lanes, eight, cEightD, x, psubD)
			}
			VCVTDQ2PS(x, x)
			VMULPS(d, x, x)
		}
		for h := range accs {
			if fused {
				VFNMADD231PS(wv[h], x, accs[h][i])
			} else {
				t := vec()
				VMULPS(wv[h], x, t)
				VSUBPS(t, accs[h][i], accs[h][i])
			}
			round(accs[h][i])
		}
	}
	// V flashPrefetchCells cells ahead: at depth a decode token reads
	// every layer's cache once, from memory.
	PREFETCHT0(Mem{Base: pf})
	PREFETCHT0(Mem{Base: pf, Disp: 64})
	ADDQ(stride, pf)
	ADDQ(stride, vp)
	INCQ(j)
	CMPQ(j, n)
	JNE(LabelRef("cell"))
	Label("done")
	accP = Load(Param("acc"), GP64())
	for h := range accs {
		if h > 0 {
			ADDQ(accStride, accP)
		}
		for i, a := range accs[h] {
			VMOVUPS(a, Mem{Base: accP, Disp: 4 * lanes * i})
		}
		VMOVSS(sums[h], Mem{Base: sumP, Disp: 4 * h})
	}
	VZEROUPPER()
	RET()
	return name
}

// nibbleOp applies op to x with the constant c: from a register on
// AVX-512 (loaded once), from memory on AVX2 (16 registers are too few to
// keep it).
func nibbleOp(lanes int, reg VecVirtual, c Mem, x VecVirtual, op func(lanes int, c Op, x VecVirtual)) {
	if lanes == 16 {
		op(lanes, reg, x)
		return
	}
	op(lanes, c, x)
}

// flashScale broadcasts the binary16 block scale at m as float32.
func flashScale(m Mem, lanes int) VecVirtual {
	if lanes == 8 {
		return broadcastF16(m)
	}
	h, d := YMM(), ZMM()
	VPBROADCASTW(m, h)
	VCVTPH2PS(h, d)
	return d
}

// pandD is x &= c on int32 lanes, EVEX-encoded for zmm.
func pandD(lanes int, c Op, x VecVirtual) {
	if lanes == 16 {
		VPANDD(c, x, x)
		return
	}
	VPAND(c, x, x)
}

// psubD is x −= c on int32 lanes.
func psubD(_ int, c Op, x VecVirtual) { VPSUBD(c, x, x) }
