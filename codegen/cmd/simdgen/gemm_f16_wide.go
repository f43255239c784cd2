package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Wide F16 GEMM (AVX-512): the same sums as the gemmF16 tiles, bit for
// bit, at twice the width. Each (row, token) pair keeps its eight-lane
// accumulator, which taking eight values at a time in order fixes, but a
// zmm holds two of them: one weight row against two tokens. The operands
// are used widened to float32: the wrapper widens a block of activations
// once for 32 rows, and the first tile over a block of weights (the "in"
// tiles) widens them as it streams them from memory and keeps them for
// the later tiles, whose loop is loads and FMAs only:
//
//	acc[r][p] += [w_r(k..k+7), w_r(k..k+7)] · [a_2p(k..k+7), a_2p+1(k..k+7)]
//
// Widening binary16 is exact and the products of two binary16 values are
// exact in float32, so the FMA rounds the same sum the gemmF16 tiles'
// ymm FMA rounds. The accumulators live in memory between calls (the
// wrapper blocks over k) and the wrapper reduces them as storeGrid does.

// f16WidePairs is the largest number of token pairs of a wide tile: 4
// rows × 6 pairs take 24 zmm accumulators, 6 activations and a weight.
const f16WidePairs = 6

// f16WideK is the values per k-block and f16WideWRow the stride of the
// widened weight rows in floats: a line more than the block, so that the
// stores of one row and the loads of the next do not alias 4 KiB apart.
// Both reach simd through the table.
const (
	f16WideK    = 512
	f16WideWRow = f16WideK + 16
)

const f16WideSig = "func(ns int, w16 *byte, w16Stride int, wf *float32, a *float32, acc *float32, zero bool, rgs int)"

func genGemmF16Wide(v variant, reg *registry) {
	if !v.vnni {
		return
	}
	pairs := genWidenPairF16(v)
	var tiles, in []string
	for p := 1; p <= f16WidePairs; p++ {
		tiles = append(tiles, f16WideTile(v, p, false))
		in = append(in, f16WideTile(v, p, true))
	}
	reg.f16Wide(v, pairs, tiles, in)
}

// genWidenPairF16 emits the activations' widening kernel: two tokens'
// chunks of eight binary16 values interleaved into the tiles'
// [step][pair][16] layout, one zmm per chunk.
func genWidenPairF16(v variant) string {
	name := fname("widenPairF16", v)
	TEXT(name, NOSPLIT, "func(ns int, src0, src1 *byte, dst *float32, dstStride int)")
	Doc(name+" widens ns chunks of eight binary16 values from each of src0 and",
		"src1 to float32, chunk i to dst[i·dstStride/4:] (src0's) and 32 bytes after (src1's).")
	ns := Load(Param("ns"), GP64())
	s0 := Load(Param("src0"), GP64())
	s1 := Load(Param("src1"), GP64())
	dst := Load(Param("dst"), GP64())
	stride := Load(Param("dstStride"), GP64())
	loopBlocks(ns, func() {
		y, z := YMM(), ZMM()
		VMOVDQU(Mem{Base: s0}, y.AsX())
		VINSERTI128(U8(1), Mem{Base: s1}, y, y)
		VCVTPH2PS(y, z)
		VMOVUPS(z, Mem{Base: dst})
		ADDQ(U8(16), s0)
		ADDQ(U8(16), s1)
		ADDQ(stride, dst)
	})
	VZEROUPPER()
	RET()
	return name
}

// f16WideTile emits the tile of rgs groups of 4 weight rows × pairs token
// pairs over ns steps of eight values. wf: the widened rows, f16WideWRow
// floats apart; a: the pairs' widened values as [step][pair][16]; acc:
// each group's accumulators as [row][pair][16], one group after another,
// loaded (zeroed when zero is set), advanced and stored back. With in set
// the tile first widens the rows from w16 (binary16, w16Stride bytes
// apart) into wf, prefetching the next k-block of each row.
func f16WideTile(v variant, pairs int, in bool) string {
	kind := ""
	if in {
		kind = "In"
	}
	name := fmt.Sprintf("gemmF16Wide%s%dx%d%s", kind, gemmRows, 2*pairs, v.suffix)
	TEXT(name, NOSPLIT, f16WideSig)
	what := "widened F16 weight rows (wf)"
	if in {
		what = "F16 weight rows (w16, widened into wf)"
	}
	Doc(fmt.Sprintf("%s adds ns steps of eight values of rgs groups of %d %s", name, gemmRows, what),
		fmt.Sprintf("times %d token pairs (a, [step][pair][16]) into the eight-lane accumulators", pairs),
		"at acc ([group][row][pair][16]; zeroed first if zero).")
	const rowBytes = 4 * f16WideWRow
	rgs := Load(Param("rgs"), GP64())
	wf := Load(Param("wf"), GP64())
	accp := Load(Param("acc"), GP64())
	var w16, stride Register
	if in {
		w16 = Load(Param("w16"), GP64())
		stride = Load(Param("w16Stride"), GP64())
	}
	acc := make([][]VecVirtual, gemmRows)
	for r := range acc {
		acc[r] = make([]VecVirtual, pairs)
		for p := range acc[r] {
			acc[r][p] = ZMM()
		}
	}
	Label("group")
	zero := Load(Param("zero"), GP8())
	TESTB(zero, zero)
	JNZ(LabelRef("zero"))
	for r := range acc {
		for p, z := range acc[r] {
			VMOVUPS(Mem{Base: accp, Disp: 64 * (r*pairs + p)}, z)
		}
	}
	JMP(LabelRef("ready"))
	Label("zero")
	for r := range acc {
		for _, z := range acc[r] {
			VPXORD(z, z, z)
		}
	}
	Label("ready")
	var rows rowSet
	if in {
		rows = rowSet{base: GP64(), stride: stride, base3: GP64(), n: gemmRows}
		MOVQ(w16, rows.base)
		LEAQ(Mem{Base: w16, Index: stride, Scale: 2}, rows.base3)
		ADDQ(stride, rows.base3)
	}
	ns := Load(Param("ns"), GP64())
	a := Load(Param("a"), GP64())
	off := GP64()
	XORQ(off, off)
	loopBlocks(ns, func() {
		x := make([]VecVirtual, pairs)
		for p := range x {
			x[p] = ZMM()
			VMOVUPS(Mem{Base: a, Disp: 64 * p}, x[p])
		}
		for r := range acc {
			y := ZMM()
			wm := Mem{Base: wf, Index: off, Scale: 2, Disp: r * rowBytes}
			if in {
				// Widen, keep, and read back broadcast (forwarded from
				// the store): a fresh ymm written whole, so the
				// allocator sees no partial register live across
				// iterations.
				t := YMM()
				PREFETCHT0(rows.mem(r, 2*f16WideK))
				VCVTPH2PS(rows.mem(r, 0), t)
				VMOVUPS(t, wm)
			}
			VBROADCASTF64X4(wm, y)
			for p := range x {
				VFMADD231PS(x[p], y, acc[r][p])
			}
		}
		if in {
			rows.advance(16)
		}
		ADDQ(U8(16), off)
		ADDQ(U32(64*pairs), a)
	})
	for r := range acc {
		for p, z := range acc[r] {
			VMOVUPS(z, Mem{Base: accp, Disp: 64 * (r*pairs + p)})
		}
	}
	ADDQ(U32(64*gemmRows*pairs), accp)
	ADDQ(U32(gemmRows*rowBytes), wf)
	if in {
		LEAQ(Mem{Base: w16, Index: stride, Scale: 4}, w16)
	}
	DECQ(rgs)
	JNZ(LabelRef("group"))
	VZEROUPPER()
	RET()
	return name
}
