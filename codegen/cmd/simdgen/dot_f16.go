package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// F16·F16 dot products: F16C widens eight halves at a time, FMA multiplies
// (exactly: binary16 products fit float32) and sums in four accumulators.

const f16Chunk = 32 // elements per loop iteration: four ymm of eight

// f16Chunk4 adds one chunk of w·a into the four accumulators.
func f16Chunk4(w, a Mem, accs []VecVirtual) {
	for i, acc := range accs {
		x, y := YMM(), YMM()
		VCVTPH2PS(w.Offset(16*i), x)
		VCVTPH2PS(a.Offset(16*i), y)
		VFMADD231PS(y, x, acc)
	}
}

// sumInto adds accs[1:] into accs[0].
func sumInto(accs []VecVirtual) VecVirtual {
	VADDPS(accs[1], accs[0], accs[0])
	VADDPS(accs[3], accs[2], accs[2])
	VADDPS(accs[2], accs[0], accs[0])
	return accs[0]
}

func genDotF16(v variant, reg *registry) {
	if v.vnni {
		genDotF16Zmm(v, reg)
		return
	}
	one := fname("dotF16", v)
	TEXT(one, NOSPLIT, "func(nb int, w, a *byte) float32")
	Doc(one + " returns the dot product of nb chunks of 32 binary16 values at w and a.")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	accs := zeroed(4)
	loopBlocks(nb, func() {
		f16Chunk4(Mem{Base: w}, Mem{Base: a}, accs)
		ADDQ(U32(2*f16Chunk), w)
		ADDQ(U32(2*f16Chunk), a)
	})
	finishDot(sumInto(accs))

	rows := fname("dotF16Rows", v)
	TEXT(rows, NOSPLIT, "func(nb int, w *byte, stride int, a *byte, dst *float32)")
	Doc(rows+" stores in dst[0:4] the dot products of four binary16 rows,", "stride bytes apart from w, with a (nb chunks of 32 each).")
	nb = Load(Param("nb"), GP64())
	ws := rowPointers()
	a = Load(Param("a"), GP64())
	accs = zeroed(2 * rowsPerCall)
	off := GP64()
	XORQ(off, off)
	loopBlocks(nb, func() {
		for half := 0; half < 2; half++ {
			y := []VecVirtual{YMM(), YMM()}
			VCVTPH2PS(Mem{Base: a, Index: off, Scale: 1, Disp: 32 * half}, y[0])
			VCVTPH2PS(Mem{Base: a, Index: off, Scale: 1, Disp: 32*half + 16}, y[1])
			for r := range ws {
				for i := range y {
					x := YMM()
					VCVTPH2PS(Mem{Base: ws[r], Index: off, Scale: 1, Disp: 32*half + 16*i}, x)
					VFMADD231PS(y[i], x, accs[2*r+i])
				}
			}
		}
		ADDQ(U32(2*f16Chunk), off)
	})
	for r := 0; r < rowsPerCall; r++ {
		VADDPS(accs[2*r+1], accs[2*r], accs[2*r])
	}
	sums := make([]VecVirtual, rowsPerCall)
	for r := range sums {
		sums[r] = accs[2*r]
	}
	storeSums(sums)
	reg.dot(v, "TypeF16", one, rows, f16Chunk)
}
