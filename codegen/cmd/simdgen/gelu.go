package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// GELU by table, as ggml's GGML_GELU_FP16 path: x rounded to binary16
// (VCVTPS2PH, round to nearest even: the bits of quant.FP32ToFP16) indexes
// a float32 table of ops/ref.GELUTableEntry; x ≤ −10 gives 0 and x ≥ 10
// gives x. A NaN compares false both ways and reads the table's NaN.

var (
	cNeg10 = ConstData("neg10", F32(-10))
	cPos10 = ConstData("pos10", F32(10))
)

// Comparison predicates: ordered, quiet.
const (
	cmpLEOQ = 0x12
	cmpGEOQ = 0x1d
)

func genGELUKernel(v variant, reg *registry) {
	lanes := v.lanes()
	name := fname("geluF32", v)
	TEXT(name, NOSPLIT, "func(nc int, dst *float32, x *float32, table *float32)")
	Doc(name+fmt.Sprintf(" sets dst = GELU(x) by table lookup for nc chunks of %d floats,", lanes),
		"bit-identical to ops/ref.GELU.")
	nc := Load(Param("nc"), GP64())
	dst := Load(Param("dst"), GP64())
	x := Load(Param("x"), GP64())
	table := Load(Param("table"), GP64())
	if v.vnni {
		geluLoopZMM(nc, dst, x, table)
	} else {
		geluLoopYMM(nc, dst, x, table)
	}
	VZEROUPPER()
	RET()
	reg.gelu(v, name)
}

func geluLoopZMM(nc, dst, x, table Register) {
	lo, hi, zero := ZMM(), ZMM(), ZMM()
	VBROADCASTSS(cNeg10, lo)
	VBROADCASTSS(cPos10, hi)
	VXORPS(zero, zero, zero)
	loopBlocks(nc, func() {
		in, idx, out := ZMM(), ZMM(), ZMM()
		h := YMM()
		VMOVUPS(Mem{Base: x}, in)
		VCVTPS2PH(U8(0), in, h)
		VPMOVZXWD(h, idx)
		all, le, ge := K(), K(), K()
		KXNORW(all, all, all)
		VGATHERDPS(Mem{Base: table, Index: idx, Scale: 4}, all, out)
		VCMPPS(U8(cmpGEOQ), hi, in, ge)
		VMOVAPS(in, ge, out)
		VCMPPS(U8(cmpLEOQ), lo, in, le)
		VMOVAPS(zero, le, out)
		VMOVUPS(out, Mem{Base: dst})
		ADDQ(U32(64), x)
		ADDQ(U32(64), dst)
	})
}

func geluLoopYMM(nc, dst, x, table Register) {
	lo, hi := YMM(), YMM()
	VBROADCASTSS(cNeg10, lo)
	VBROADCASTSS(cPos10, hi)
	loopBlocks(nc, func() {
		in, idx, out, mask := YMM(), YMM(), YMM(), YMM()
		h := XMM()
		VMOVUPS(Mem{Base: x}, in)
		VCVTPS2PH(U8(0), in, h)
		VPMOVZXWD(h, idx)
		VPCMPEQD(mask, mask, mask) // gather every lane (the gather clears it)
		VXORPS(out, out, out)
		VGATHERDPS(mask, Mem{Base: table, Index: idx, Scale: 4}, out)
		ge, le := YMM(), YMM()
		VCMPPS(U8(cmpGEOQ), hi, in, ge)
		VBLENDVPS(ge, in, out, out) // x where x ≥ 10
		VCMPPS(U8(cmpLEOQ), lo, in, le)
		VANDNPS(out, le, out) // 0 where x ≤ −10
		VMOVUPS(out, Mem{Base: dst})
		ADDQ(U32(32), x)
		ADDQ(U32(32), dst)
	})
}
