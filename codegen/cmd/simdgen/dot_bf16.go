package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// BF16·BF16 dot products and GEMM tiles, summed in the order of ggml's
// AVX512-BF16 kernels without needing VDPBF16PS, which most AVX-512
// processors lack. (Where the CPU has it, the GEMM takes the VDPBF16PS
// tiles at the end of this file instead: same order, same bits but for
// denormals.)
//
// A bfloat16 is the top half of a float32, so widening is integer work on
// the dwords as loaded: the odd element of each dword is the dword AND
// 0xFFFF0000, the even one the dword shifted left by 16. Products of two
// bfloat16 values are exact in float32, so an FMA of the exact product
// rounds once, as VDPBF16PS's adds do. VDPBF16PS adds, per float32 lane i,
// first the product of elements 2i+1 and then that of 2i (Intel's
// pseudocode); the kernels issue the odd FMA before the even one to match.
// (VDPBF16PS also flushes denormal inputs and results; the FMAs do not, a
// difference only for values below 2⁻¹²⁶. Measured on Zen 5: the
// accumulator is read with denormals as zero too, and each of the two adds
// flushes a result that rounds to a denormal.)
//
//   - The dot kernel is ggml_vec_dot_bf16 (llama.cpp's path for one
//     token and for lengths that are not whole 32-value chunks): two
//     16-lane accumulators over 64-value blocks (values 0–31 and 32–63),
//     each reduced as _mm512_reduce_add_ps does, added in float64 with the
//     tail's products. The AVX2 variant keeps each 16-lane accumulator in
//     two ymm and gives the same bits.
//   - The AVX-512 GEMM tiles are tinyBLAS's (llamafile sgemm, which
//     llama.cpp uses for batches of two or more tokens): one 16-lane
//     accumulator per (row, token) pair over 32-value chunks, reduced as
//     _mm512_reduce_add_ps. The AVX2 tiles keep each 16-lane accumulator
//     in two ymm (lanes 0–7 from a chunk's first 32 bytes, 8–15 from the
//     next), folded high + low as the zmm's halves are: the same bits, so
//     a machine without AVX-512 reproduces llama.cpp's AVX-512 references
//     (with 8-lane accumulators, as before, one close greedy step of
//     stories260K-BF16's p3 flipped on an AVX2-only machine).

const bf16DotChunk = 64 // elements per dot-kernel iteration

var cHighWords = ConstData("highWords", U32(0xffff0000))

// bf16Mask broadcasts 0xFFFF0000 into a fresh register (zmm for AVX-512).
func bf16Mask(zmm bool) VecVirtual {
	m := YMM()
	if zmm {
		m = ZMM()
	}
	VPBROADCASTD(cHighWords, m)
	return m
}

// bf16FMA adds w·a into acc for the bfloat16 pairs of the dwords at wm
// and am (one vector each), odd elements first. Clobbers nothing else.
func bf16FMA(v variant, zmm bool, mask VecVirtual, wm, am Mem, acc VecVirtual) {
	x, y, xo, yo := bf16Regs(zmm)
	vload(v, zmm, wm, x)
	vload(v, zmm, am, y)
	pand(v, mask, x, xo)
	pand(v, mask, y, yo)
	VFMADD231PS(yo, xo, acc)
	VPSLLD(U8(16), x, x)
	VPSLLD(U8(16), y, y)
	VFMADD231PS(y, x, acc)
}

func bf16Regs(zmm bool) (a, b, c, d VecVirtual) {
	if zmm {
		return ZMM(), ZMM(), ZMM(), ZMM()
	}
	return YMM(), YMM(), YMM(), YMM()
}

// vload loads one vector of integers.
func vload(v variant, zmm bool, m Mem, x VecVirtual) {
	if zmm || v.vnni {
		VMOVDQU32(m, x) // EVEX: x may be a register above 15
	} else {
		VMOVDQU(m, x)
	}
}

func genDotBF16(v variant, reg *registry) {
	zmm := v.vnni
	one := fname("dotBF16", v)
	TEXT(one, NOSPLIT, "func(n int, w, a *byte) float32")
	Doc(one+" returns the dot product of n bfloat16 values at w and a, summed",
		"as ggml_vec_dot_bf16's AVX512-BF16 path sums them: 64-value blocks in",
		"two float32 accumulators, their sums and the tail's products in float64.")
	n := Load(Param("n"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	nb := GP64()
	MOVQ(n, nb)
	SHRQ(U8(6), nb)
	mask := bf16Mask(zmm)
	var halves [2]VecVirtual // the two 16-lane sums, as ymm
	if zmm {
		accs := zeroedZmm(2)
		loopBlocks(nb, func() {
			for i, acc := range accs {
				bf16FMA(v, true, mask, Mem{Base: w, Disp: 64 * i}, Mem{Base: a, Disp: 64 * i}, acc)
			}
			ADDQ(U32(2*bf16DotChunk), w)
			ADDQ(U32(2*bf16DotChunk), a)
		})
		halves[0], halves[1] = foldZmm(accs[0]), foldZmm(accs[1])
	} else {
		// accs[2i] and accs[2i+1]: lanes 0–7 and 8–15 of accumulator i.
		accs := zeroed(4)
		loopBlocks(nb, func() {
			for i, acc := range accs {
				bf16FMA(v, false, mask, Mem{Base: w, Disp: 32 * i}, Mem{Base: a, Disp: 32 * i}, acc)
			}
			ADDQ(U32(2*bf16DotChunk), w)
			ADDQ(U32(2*bf16DotChunk), a)
		})
		for i := range halves {
			VADDPS(accs[2*i], accs[2*i+1], accs[2*i+1]) // high half + low half, as foldZmm
			halves[i] = accs[2*i+1]
		}
	}
	s0, s1 := hsum(halves[0]), hsum(halves[1])
	VCVTSS2SD(s0, s0, s0)
	VCVTSS2SD(s1, s1, s1)
	VADDSD(s1, s0, s0)
	bf16Tail(n, w, a, s0)
	VCVTSD2SS(s0, s0, s0)
	VZEROUPPER()
	Store(s0, ReturnIndex(0))
	RET()
	// Chunk 1: the kernel takes any length, tail included.
	reg.dot(v, "TypeBF16", one, "", 1)
}

// bf16Tail adds to the float64 in sum the products of the last n mod 64
// values at w and a, one at a time in float64 (exact products).
func bf16Tail(n, w, a Register, sum VecVirtual) {
	rest := GP64()
	MOVQ(n, rest)
	ANDQ(U32(bf16DotChunk-1), rest)
	JZ(LabelRef("tailDone"))
	Label("tail")
	x, y := XMM(), XMM()
	for _, p := range []struct {
		m Register
		x VecVirtual
	}{{w, x}, {a, y}} {
		t := GP32()
		MOVWLZX(Mem{Base: p.m}, t)
		SHLL(U8(16), t)
		VMOVD(t, p.x)
		VCVTSS2SD(p.x, p.x, p.x)
		ADDQ(U8(2), p.m)
	}
	VMULSD(y, x, x)
	VADDSD(x, sum, sum)
	DECQ(rest)
	JNZ(LabelRef("tail"))
	Label("tailDone")
}

// gemmBF16 describes one variant's tiles: lanes per accumulator and the
// largest token count that fits the register file.
func gemmBF16Shape(v variant) (chunk, toks int) {
	if v.vnni {
		return 32, 4 // 16 zmm accumulators, 8 split activations, 2 weights, mask
	}
	return 32, 1 // 4 rows × 2 ymm accumulators, 2 split activations, 2 weights, mask
}

func genGemmBF16(v variant, reg *registry) {
	chunk, maxT := gemmBF16Shape(v)
	var names []string
	for toks := 1; toks <= maxT; toks++ {
		names = append(names, gemmBF16Tile(v, toks, chunk))
	}
	reg.gemm(v, "TypeBF16", chunk, names)
}

func gemmBF16Tile(v variant, toks, chunk int) string {
	if !v.vnni {
		return gemmBF16TileYmm(v, toks)
	}
	tile := openFloatTile("BF16", v, toks, "nb chunks of 32 bfloat16 values (tinyBLAS's order)")
	name, nb, ws, as, off := tile.name, tile.nb, tile.ws, tile.as, tile.off
	mask := bf16Mask(true)
	acc := make([][]VecVirtual, gemmRows)
	for r := range acc {
		acc[r] = zeroedZmm(toks)
	}
	loopBlocks(nb, func() {
		bf16TileVector(v, true, mask, ws, as, off, 0, func(r, t int) VecVirtual { return acc[r][t] })
		ADDQ(U32(2*chunk), off)
	})
	for r := range acc {
		for t := range acc[r] {
			acc[r][t] = foldZmm(acc[r][t])
		}
	}
	storeGrid(v, acc)
	return name
}

// bf16TileVector adds one vector of bfloat16 pairs per row and token, at
// disp bytes past off, into the tile's accumulators acc(r, t): each
// token's activations split once into odd and even elements, then per
// row the odd products before the even ones (VDPBF16PS's order per lane).
func bf16TileVector(v variant, zmm bool, mask VecVirtual, ws, as []Register, off Register, disp int, acc func(r, t int) VecVirtual) {
	odd, even := make([]VecVirtual, len(as)), make([]VecVirtual, len(as))
	for t, a := range as {
		_, _, odd[t], even[t] = bf16Regs(zmm)
		vload(v, zmm, at(a, off, disp), even[t])
		pand(v, mask, even[t], odd[t])
		VPSLLD(U8(16), even[t], even[t])
	}
	for r, w := range ws {
		x, xo, _, _ := bf16Regs(zmm)
		vload(v, zmm, at(w, off, disp), x)
		pand(v, mask, x, xo)
		for t := range as {
			VFMADD231PS(odd[t], xo, acc(r, t))
		}
		VPSLLD(U8(16), x, x)
		for t := range as {
			VFMADD231PS(even[t], x, acc(r, t))
		}
	}
}

// gemmBF16TileYmm is the AVX2 tile in tinyBLAS's AVX-512 order: each
// (row, token) accumulator is 16 lanes in two ymm over 32-value chunks
// (half h of a chunk is lanes 8h … 8h+7), folded high + low at the end
// as foldZmm folds a zmm.
func gemmBF16TileYmm(v variant, toks int) string {
	tile := openFloatTile("BF16", v, toks, "nb chunks of 32 bfloat16 values (tinyBLAS's AVX-512 order, 16 lanes in two ymm)")
	name, nb, ws, as, off := tile.name, tile.nb, tile.ws, tile.as, tile.off
	mask := bf16Mask(false)
	acc := make([][][2]VecVirtual, gemmRows)
	for r := range acc {
		acc[r] = make([][2]VecVirtual, toks)
		for t := range acc[r] {
			z := zeroedV(v, 2)
			acc[r][t] = [2]VecVirtual{z[0], z[1]}
		}
	}
	loopBlocks(nb, func() {
		for h := range 2 {
			bf16TileVector(v, false, mask, ws, as, off, 32*h, func(r, t int) VecVirtual { return acc[r][t][h] })
		}
		ADDQ(U32(2*32), off)
	})
	grid := make([][]VecVirtual, gemmRows)
	for r := range acc {
		grid[r] = make([]VecVirtual, toks)
		for t, pair := range acc[r] {
			VADDPS(pair[0], pair[1], pair[1]) // high half + low half, as foldZmm
			grid[r][t] = pair[1]
		}
	}
	storeGrid(v, grid)
	return name
}

// bf16DPToks is the largest token count of the VDPBF16PS tiles: 4 rows ×
// 6 tokens are 24 zmm accumulators, beside 6 activations and a weight.
const bf16DPToks = 6

// genGemmBF16DP emits the AVX-512 GEMM tiles that sum with VDPBF16PS, for
// CPUs with AVX512_BF16 (the table lists them beside the tiles above,
// which the others run). Each (row, token) pair keeps one 16-lane
// accumulator over 32-value chunks, reduced as _mm512_reduce_add_ps:
// tinyBLAS's order, the tiles above, in one instruction per chunk instead
// of two FMAs and the widening. The sums are the same bits except where
// VDPBF16PS flushes: bfloat16 denormal inputs count as zero, and a lane's
// sum that rounds into the denormal range (below 2⁻¹²⁶ in magnitude)
// becomes a zero of its sign after either product; the FMAs keep both.
func genGemmBF16DP(v variant, reg *registry) {
	if !v.vnni {
		return
	}
	var names []string
	for toks := 1; toks <= bf16DPToks; toks++ {
		names = append(names, gemmBF16DPTile(v, toks))
	}
	reg.bf16DP(v, names)
}

func gemmBF16DPTile(v variant, toks int) string {
	tile := openFloatTile("BF16DP", v, toks, "nb chunks of 32 bfloat16 values summed by VDPBF16PS (needs AVX512_BF16)")
	name, nb, ws, as, off := tile.name, tile.nb, tile.ws, tile.as, tile.off
	acc := make([][]VecVirtual, gemmRows)
	for r := range acc {
		acc[r] = zeroedZmm(toks)
	}
	loopBlocks(nb, func() {
		act := make([]VecVirtual, toks)
		for t, a := range as {
			act[t] = ZMM()
			VMOVDQU32(at(a, off, 0), act[t])
		}
		for r, w := range ws {
			x := ZMM()
			VMOVDQU32(at(w, off, 0), x)
			for t := range as {
				vdpbf16ps(act[t], x, acc[r][t])
			}
		}
		ADDQ(U32(64), off)
	})
	for r := range acc {
		for t := range acc[r] {
			acc[r][t] = foldZmm(acc[r][t])
		}
	}
	storeGrid(v, acc)
	return name
}
