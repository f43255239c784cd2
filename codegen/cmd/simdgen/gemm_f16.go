package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// F16 GEMM: for every eight elements each token's activations and each
// row's weights are widened once, then every (row, token) pair takes one
// FMA. AVX2 fits 4×3 accumulators beside its operands in 16 registers;
// the AVX-512 variant 4×5 in 32.
//
// The tiles step over 16-value chunks, not the dot kernels' 32: each
// (row, token) pair has one accumulator that takes the values eight at a
// time in order, so the chunk size does not change the sum's bits, and
// 16 lets head dimensions such as Phi-2's 80 (tinyBLAS's multiple of 16,
// which llama.cpp's batches need too) take the GEMM in attention.
const gemmF16Chunk = 16

func gemmF16Toks(v variant) int {
	if v.vnni {
		return 5
	}
	return 3
}

func genGemmF16(v variant, reg *registry) {
	var names []string
	for toks := 1; toks <= gemmF16Toks(v); toks++ {
		names = append(names, gemmF16Tile(v, toks))
	}
	reg.gemm(v, "TypeF16", gemmF16Chunk, names)
}

func gemmF16Tile(v variant, toks int) string {
	name := gemmName("F16", v, toks)
	TEXT(name, NOSPLIT, gemmSig)
	gemmDoc(name, "nb chunks of 16 binary16 values", toks)
	nb := Load(Param("nb"), GP64())
	ws := pointers("w", "wStride", gemmRows)
	as := pointers("a", "aStride", toks)
	off := GP64()
	XORQ(off, off)
	acc := accGrid(v, toks)
	loopBlocks(nb, func() {
		for step := 0; step < gemmF16Chunk/8; step++ {
			x := make([]VecVirtual, toks)
			for t, a := range as {
				x[t] = YMM()
				VCVTPH2PS(at(a, off, 16*step), x[t])
			}
			for r, w := range ws {
				y := YMM()
				VCVTPH2PS(at(w, off, 16*step), y)
				for t := range as {
					VFMADD231PS(x[t], y, acc[r][t])
				}
			}
		}
		ADDQ(U32(2*gemmF16Chunk), off)
	})
	storeGrid(v, acc)
	return name
}
