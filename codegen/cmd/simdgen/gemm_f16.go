package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// F16 GEMM: for every chunk each token's activations and each row's
// weights are widened once, then every (row, token) pair takes one FMA.
// Each pair has one accumulator, reduced at the end:
//
//   - AVX2: eight lanes (ymm), values eight at a time in order, the order
//     of llamafile's tinyBLAS<8> (llama.cpp's AVX2 build); 4×3 tiles fit
//     beside their operands in 16 registers.
//   - AVX-512: sixteen lanes (zmm), reduced as _mm512_reduce_add_ps: the
//     order of tinyBLAS<16, __m512, …>, which llama.cpp's AVX-512 build
//     takes for batches of two or more tokens when the length is a
//     multiple of 16 (ops/ref's tinyDot); 4×5 tiles in 32 registers.
//
// The tiles step over 16-value chunks: the chunk size does not change an
// accumulator's bits, and 16 lets head dimensions such as Phi-2's 80
// (tinyBLAS's multiple of 16, which llama.cpp's batches need too) take the
// GEMM in attention.
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
	tile := openFloatTile("F16", v, toks, "nb chunks of 16 binary16 values")
	name, nb, ws, as, off := tile.name, tile.nb, tile.ws, tile.as, tile.off
	if v.vnni {
		gemmF16Body16(v, nb, ws, as, off)
		return name
	}
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

// gemmF16Body16 is the AVX-512 tiles' loop: one 16-lane zmm accumulator per
// (row, token) pair, folded to eight lanes at the end so that storeGrid's
// reduction completes _mm512_reduce_add_ps's order.
func gemmF16Body16(v variant, nb Register, ws, as []Register, off Register) {
	acc := make([][]VecVirtual, len(ws))
	for r := range acc {
		acc[r] = zeroedZmm(len(as))
	}
	loopBlocks(nb, func() {
		x := make([]VecVirtual, len(as))
		for t, a := range as {
			x[t] = ZMM()
			VCVTPH2PS(at(a, off, 0), x[t])
		}
		for r, w := range ws {
			y := ZMM()
			VCVTPH2PS(at(w, off, 0), y)
			for t := range as {
				VFMADD231PS(x[t], y, acc[r][t])
			}
		}
		ADDQ(U32(2*gemmF16Chunk), off)
	})
	for r := range acc {
		for t := range acc[r] {
			acc[r][t] = foldZmm(acc[r][t])
		}
	}
	storeGrid(v, acc)
}
