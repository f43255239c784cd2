package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Constants of ggml_compute_fp32_to_bf16's rounding.
var (
	cRoundBias = ConstData("bf16Bias", U32(0x7fff))
	cOneD      = ConstData("oneDword", U32(1))
	cInfBits   = ConstData("infBits", U32(0x7f800000))
	cQuietBit  = ConstData("bf16Quiet", U32(64))
)

// genQuantBF16 emits quantBF16AVX2(nb int, src *float32, dst *byte) bool,
// which narrows nb chunks of 8 floats to bfloat16 as quant.FP32ToBF16
// (ggml_compute_fp32_to_bf16) does: round to nearest even by adding
// 0x7fff plus the lowest kept bit, and NaNs (|u| > 0x7f800000) truncated
// with the quiet bit set. BF16 weights multiply bf16-rounded activations,
// so this is their "quantizer". Integer AVX2 only: VCVTNEPS2BF16 would
// need AVX512-BF16 and does not quiet NaNs the same way.
func genQuantBF16(reg *registry) {
	name := "quantBF16AVX2"
	TEXT(name, NOSPLIT, "func(nb int, src *float32, dst *byte) bool")
	Doc(name + " narrows nb chunks of 8 float32 to bfloat16 (ggml's rounding).")
	nb := Load(Param("nb"), GP64())
	src := Load(Param("src"), GP64())
	dst := Load(Param("dst"), GP64())
	bias, one, inf, quiet, abs := YMM(), YMM(), YMM(), YMM(), YMM()
	VPBROADCASTD(cRoundBias, bias)
	VPBROADCASTD(cOneD, one)
	VPBROADCASTD(cInfBits, inf)
	VPBROADCASTD(cQuietBit, quiet)
	VPBROADCASTD(cAbsMask, abs)
	loopBlocks(nb, func() {
		u, r, n, isNaN := YMM(), YMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: src}, u)
		VPSRLD(U8(16), u, n) // truncated; the rounding's lowest kept bit below
		VPAND(one, n, r)
		VPADDD(bias, r, r)
		VPADDD(u, r, r)
		VPSRLD(U8(16), r, r)
		VPOR(quiet, n, n) // the NaN result
		VPAND(abs, u, isNaN)
		VPCMPGTD(inf, isNaN, isNaN)
		VPBLENDVB(isNaN, n, r, r)
		hi := XMM()
		VEXTRACTI128(U8(1), r, hi)
		VPACKUSDW(hi, r.AsX(), hi)
		VMOVDQU(hi, Mem{Base: dst})
		ADDQ(U32(32), src)
		ADDQ(U32(16), dst)
	})
	VZEROUPPER()
	MOVB(U8(1), AL)
	Store(AL, ReturnIndex(0))
	RET()
	for _, v := range variants {
		reg.quant(v, "TypeBF16", name, 8)
	}
}
