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
// flashTile<V> applies, for each cell j in order, ops/ref's update of a
// 64-column block of the accumulator: when ms[j] ≠ 1, acc·ms[j]
// (ggml_vec_scale, rounded to binary16 with an f16 V), then
// fma(v_j, vs[j], acc) (ggml_vec_mad, likewise rounded). A scale by
// exactly 1 is an identity, so testing the value (not "was the maximum
// raised") gives the reference's bits. Quantized V rows are widened as
// quant.Dequantize does: d·q in float32, which is exact (an 11-bit
// significand times an integer below 2⁸).
//
// flashExp is float32(exp(float64(x))), the reference's expf, in double
// precision: x = n·ln2 + r, |r| ≤ ln2/2, exp(r) by its Taylor polynomial
// to r¹¹ (truncation below 2⁻⁴⁶, far below a float32 ulp), then ·2ⁿ and
// one rounding to float32. Two results can round differently only when
// the double lies near a float32 rounding boundary, so any lane whose
// double is within 2¹⁰ double ulps of one (or whose x is outside
// [−87, 0], where float32 results may be subnormal, or NaN) flags its
// group of 16 for the caller to recompute with the scalar function. The
// kernel uses AVX2 (ymm, four doubles) for both variants.

// flashOne is the bit pattern of float32 1.
const flashOne = 0x3f800000

// fexpGuard is the half-width, in double ulps, of the band around float32
// rounding boundaries that sends a group to the scalar path.
const fexpGuard = 1 << 10

var (
	cFExpLog2e  = constF64("fexpLog2e", 0x1.71547652b82fep0)
	cFExpShift  = constF64("fexpShift", 0x1.8p52)
	cFExpLn2Hi  = constF64("fexpLn2Hi", 0x1.62e42feep-1)
	cFExpLn2Lo  = constF64("fexpLn2Lo", 0x1.a39ef35793c76p-33)
	cFExpCoef   = fexpCoefs()
	cFExpLow29  = constU64("fexpLow29", 1<<29-1)
	cFExpBandLo = constU64("fexpBandLo", 1<<28-fexpGuard)
	cFExpMinus1 = constU64("fexpMinus1", math.MaxUint64)
	cFExpBandW  = constU64("fexpBandW", 2*fexpGuard+1)
	cFExpMin    = constF32("fexpMin", -87)
	cFExpZero   = constF32("fexpZero", 0)
	cNibMask    = constVec("flashNibMask", 0x0f)
	cEightD     = constVec("flashEightD", 8)
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

// genFlashTiles emits the tile kernels of variant v and, once, flashExp.
func genFlashTiles(v variant, reg *registry) {
	exp := fname("flashExp", variants[0])
	if v == variants[0] {
		genFlashExp(exp)
	}
	reg.flashTiles(v, exp, genFlashTile(v, "F16"), genFlashTile(v, "Q8_0"), genFlashTile(v, "Q4_0"))
}

func genFlashExp(name string) {
	TEXT(name, NOSPLIT, "func(ng int, x *float32, dst *float32) uint64")
	Doc(name+" sets dst[i] = float32(exp(float64(x[i]))) for ng ≤ 64 groups of 16",
		"floats; bit g of the result is set where group g must be recomputed",
		"(a lane near a rounding boundary or outside [−87, 0]).")
	ng := Load(Param("ng"), GP64())
	x := Load(Param("x"), GP64())
	dst := Load(Param("dst"), GP64())
	res, bit := GP64(), GP64()
	XORQ(res, res)
	MOVQ(U32(1), bit)
	loopBlocks(ng, func() {
		flags := GP32()
		XORL(flags, flags)
		for q := 0; q < 4; q++ {
			fexpQuarter(Mem{Base: x, Disp: 16 * q}, Mem{Base: dst, Disp: 16 * q}, flags)
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
	xf := XMM()
	VMOVUPS(src, xf)
	ge, le := XMM(), XMM()
	VCMPPS(U8(0x1d), cFExpMin, xf, ge)  // x ≥ −87 (false for NaN)
	VCMPPS(U8(0x12), cFExpZero, xf, le) // x ≤ 0
	VANDPS(le, ge, ge)
	m := GP32()
	VMOVMSKPS(ge, m)
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

// flashTileLanes is the float count of one vector of variant v.
func flashTileLanes(v variant) int {
	if v.vnni {
		return 16
	}
	return 8
}

// genFlashTile emits flashTile<kind>: n cells' updates of a 64-column
// accumulator block (see above), V rows vStride bytes apart.
func genFlashTile(v variant, kind string) string {
	name := fname("flashTile"+kind, v)
	lanes := flashTileLanes(v)
	vec := func() VecVirtual {
		if lanes == 16 {
			return ZMM()
		}
		return YMM()
	}
	TEXT(name, NOSPLIT, "func(n int, acc *float32, v *byte, vStride int, ms, vs *float32)")
	Doc(fmt.Sprintf("%s applies n cells' online-softmax updates to 64 accumulator", name),
		fmt.Sprintf("values from %s V rows vStride bytes apart (ops/ref.FlashScale, FlashMad).", kind))
	n := Load(Param("n"), GP64())
	accP := Load(Param("acc"), GP64())
	vp := Load(Param("v"), GP64())
	stride := Load(Param("vStride"), GP64())
	msP := Load(Param("ms"), GP64())
	vsP := Load(Param("vs"), GP64())
	nacc := 64 / lanes
	accs := make([]VecVirtual, nacc)
	for i := range accs {
		accs[i] = vec()
		VMOVUPS(Mem{Base: accP, Disp: 4 * lanes * i}, accs[i])
	}
	f16 := kind == "F16"
	round := func(a VecVirtual) {
		if !f16 {
			return
		}
		var h VecVirtual
		if lanes == 16 {
			h = YMM()
		} else {
			h = XMM()
		}
		VCVTPS2PH(U8(0), a, h)
		VCVTPH2PS(h, a)
	}
	var mask, eight VecVirtual
	if kind == "Q4_0" {
		mask, eight = vec(), vec()
		VPBROADCASTD(cNibMask, mask)
		VPBROADCASTD(cEightD, eight)
	}
	loopBlocks(n, func() {
		m := GP32()
		MOVL(Mem{Base: msP}, m)
		CMPL(m, U32(flashOne))
		JEQ(LabelRef("unscaled"))
		s := vec()
		VBROADCASTSS(Mem{Base: msP}, s)
		for _, a := range accs {
			VMULPS(s, a, a)
			round(a)
		}
		Label("unscaled")
		w := vec()
		VBROADCASTSS(Mem{Base: vsP}, w)
		var d VecVirtual
		for i, a := range accs {
			x := vec()
			col := lanes * i
			switch kind {
			case "F16":
				VCVTPH2PS(Mem{Base: vp, Disp: 2 * col}, x)
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
						pandD(lanes, mask, x)
					} else {
						VPSRLD(U8(4), x, x)
					}
					VPSUBD(eight, x, x)
				}
				VCVTDQ2PS(x, x)
				VMULPS(d, x, x)
			}
			VFMADD231PS(w, x, a)
			round(a)
		}
		ADDQ(stride, vp)
		ADDQ(U32(4), msP)
		ADDQ(U32(4), vsP)
	})
	for i, a := range accs {
		VMOVUPS(a, Mem{Base: accP, Disp: 4 * lanes * i})
	}
	VZEROUPPER()
	RET()
	return name
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

// pandD is x &= mask on int32 lanes, EVEX-encoded for zmm.
func pandD(lanes int, mask, x VecVirtual) {
	if lanes == 16 {
		VPANDD(mask, x, x)
		return
	}
	VPAND(mask, x, x)
}
