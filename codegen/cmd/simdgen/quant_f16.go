package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genQuantF16 emits quantF16AVX2(nb int, src *float32, dst *byte) bool,
// which converts nb chunks of 8 floats to binary16 with F16C's
// VCVTPS2PH, rounding to nearest even: the same bits as quant.FP32ToFP16,
// NaNs and infinities included, so it never fails. F16 weights multiply
// f16-rounded activations, so this is their "quantizer".
func genQuantF16(reg *registry) {
	name := "quantF16AVX2"
	TEXT(name, NOSPLIT, "func(nb int, src *float32, dst *byte) bool")
	Doc(name + " converts nb chunks of 8 float32 to binary16 (round to nearest even).")
	nb := Load(Param("nb"), GP64())
	src := Load(Param("src"), GP64())
	dst := Load(Param("dst"), GP64())
	loopBlocks(nb, func() {
		x, h := YMM(), XMM()
		VMOVUPS(Mem{Base: src}, x)
		VCVTPS2PH(U8(0), x, h)
		VMOVDQU(h, Mem{Base: dst})
		ADDQ(U32(32), src)
		ADDQ(U32(16), dst)
	})
	VZEROUPPER()
	MOVB(U8(1), AL)
	Store(AL, ReturnIndex(0))
	RET()
	for _, v := range variants {
		reg.quant(v, "TypeF16", name, 8)
	}
}
