package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// AVX-512 F16 dot product: VCVTPH2PS widens sixteen halves into a zmm.
// The multi-row kernel stays the AVX2 one, which shares each widened
// activation among four rows: that wins where the rows are in cache
// (attention); decode matmuls, which stream weights from memory, go one
// row at a time instead (simd.DecodeRows).

// foldZmm returns, in a ymm, the sum of z's two 256-bit halves.
func foldZmm(z VecVirtual) VecVirtual {
	y := YMM()
	VEXTRACTF64X4(U8(1), z, y)
	VADDPS(z.AsY(), y, y)
	return y
}

func genDotF16Zmm(v variant, reg *registry) {
	one := fname("dotF16", v)
	TEXT(one, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(one + " returns the dot product of nb chunks of 32 binary16 values at w and a.")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	accs := zeroedZmm(2)
	loopBlocks(nb, func() {
		for i, acc := range accs {
			x, y := ZMM(), ZMM()
			VCVTPH2PS(Mem{Base: w, Disp: 32 * i}, x)
			VCVTPH2PS(Mem{Base: a, Disp: 32 * i}, y)
			VFMADD231PS(y, x, acc)
		}
		ADDQ(U32(2*f16Chunk), w)
		ADDQ(U32(2*f16Chunk), a)
	})
	VADDPS(accs[1], accs[0], accs[0])
	finishDot(foldZmm(accs[0]))
	reg.dot(v, "TypeF16", one, "dotF16RowsAVX2", f16Chunk)
}

// zeroedZmm returns fresh zeroed zmm registers.
func zeroedZmm(n int) []VecVirtual {
	r := make([]VecVirtual, n)
	for i := range r {
		r[i] = ZMM()
		VPXORD(r[i], r[i], r[i])
	}
	return r
}
