package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Flash attention's accumulator update (ops/ref.FlashMad over ggml's
// vector loop): acc = fma(x, vs, acc) per element, one rounding, then
// with a binary16 V the result rounded to binary16 (VCVTPS2PH with
// rounding mode 0, nearest even, and back), as ggml_vec_mad_f16 stores
// its accumulator. Element-wise, so bit-identical to the pure-Go loop.

// genFlashKernels emits flashMadF16 (x binary16) and flashMadF32 (x
// float32) over nc chunks of lanes floats.
func genFlashKernels(v variant, reg *registry) {
	lanes, vec := v.lanes(), v.vec
	half := func() VecVirtual {
		if lanes == 16 {
			return YMM()
		}
		return XMM()
	}
	f16 := fname("flashMadF16", v)
	TEXT(f16, NOSPLIT, "func(nc int, acc *float32, x *byte, vs float32)")
	Doc(f16+fmt.Sprintf(" sets acc to binary16(fma(x, vs, acc)) over nc chunks of %d values;", lanes),
		"x holds binary16 values.")
	nc := Load(Param("nc"), GP64())
	acc := Load(Param("acc"), GP64())
	x := Load(Param("x"), GP64())
	s := vec()
	VBROADCASTSS(Load(Param("vs"), XMM()), s)
	loopBlocks(nc, func() {
		xv, a, h := vec(), vec(), half()
		VCVTPH2PS(Mem{Base: x}, xv)
		VMOVUPS(Mem{Base: acc}, a)
		VFMADD231PS(s, xv, a)
		VCVTPS2PH(U8(0), a, h)
		VCVTPH2PS(h, a)
		VMOVUPS(a, Mem{Base: acc})
		ADDQ(U32(4*lanes), acc)
		ADDQ(U32(2*lanes), x)
	})
	VZEROUPPER()
	RET()

	f32 := fname("flashMadF32", v)
	TEXT(f32, NOSPLIT, "func(nc int, acc *float32, x *float32, vs float32)")
	Doc(f32 + fmt.Sprintf(" sets acc to fma(x, vs, acc) over nc chunks of %d floats.", lanes))
	nc = Load(Param("nc"), GP64())
	acc = Load(Param("acc"), GP64())
	x = Load(Param("x"), GP64())
	s = vec()
	VBROADCASTSS(Load(Param("vs"), XMM()), s)
	loopBlocks(nc, func() {
		xv, a := vec(), vec()
		VMOVUPS(Mem{Base: x}, xv)
		VMOVUPS(Mem{Base: acc}, a)
		VFMADD231PS(s, xv, a)
		VMOVUPS(a, Mem{Base: acc})
		ADDQ(U32(4*lanes), acc)
		ADDQ(U32(4*lanes), x)
	})
	VZEROUPPER()
	RET()
	reg.flash(v, f16, f32)
}
