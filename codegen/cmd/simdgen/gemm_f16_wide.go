package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Wide F16 GEMM (AVX-512): the same sums as the AVX-512 gemmF16 tiles,
// bit for bit (tinyBLAS<16>'s order: one sixteen-lane accumulator per
// (row, token) pair taking the values sixteen at a time in order), with
// the operands used widened to float32: the wrapper widens a block of
// activations once for 32 rows, and the first tile over a block of
// weights (the "in" tiles) widens them as it streams them from memory and
// keeps them for the later tiles, whose loop is loads and FMAs only:
//
//	acc[r][t] += w_r(k..k+15) · a_t(k..k+15)
//
// Widening binary16 is exact and the products of two binary16 values are
// exact in float32, so the FMA rounds the same sum the gemmF16 tiles'
// FMA rounds. The accumulators live in memory between calls (the wrapper
// blocks over k); the last k-block's call reduces them as the gemmF16
// tiles do (_mm512_reduce_add_ps's order) and stores the sums.

// f16WideToks is the largest number of tokens of a wide tile: 4 rows × 6
// tokens take 24 zmm accumulators, 6 activations and a weight.
const f16WideToks = 6

// f16WideK is the values per k-block and f16WideWRow the stride of the
// widened weight rows in floats: a line more than the block, so that the
// stores of one row and the loads of the next do not alias 4 KiB apart.
// Both reach simd through the table.
const (
	f16WideK    = 512
	f16WideWRow = f16WideK + 16
)

const f16WideSig = "func(ns int, w16 *byte, w16Stride int, wf *float32, a *float32, acc *float32, zero bool, rgs int, dst *float32, dstStride int)"

func genGemmF16Wide(v variant, reg *registry) {
	if !v.vnni {
		return
	}
	widen := genWidenF16(v)
	var tiles, in []string
	for t := 1; t <= f16WideToks; t++ {
		tiles = append(tiles, f16WideTile(v, t, false))
		in = append(in, f16WideTile(v, t, true))
	}
	reg.f16Wide(v, widen, tiles, in)
}

// genWidenF16 emits the activations' widening kernel: one token's chunks
// of sixteen binary16 values, one zmm each, into the tiles'
// [step][token][16] layout.
func genWidenF16(v variant) string {
	name := fname("widenF16", v)
	TEXT(name, NOSPLIT, "func(ns int, src *byte, dst *float32, dstStride int)")
	Doc(name+" widens ns chunks of sixteen binary16 values from src to float32,",
		"chunk i to dst[i·dstStride/4:].")
	ns := Load(Param("ns"), GP64())
	src := Load(Param("src"), GP64())
	dst := Load(Param("dst"), GP64())
	stride := Load(Param("dstStride"), GP64())
	loopBlocks(ns, func() {
		z := ZMM()
		VCVTPH2PS(Mem{Base: src}, z)
		VMOVUPS(z, Mem{Base: dst})
		ADDQ(U8(32), src)
		ADDQ(stride, dst)
	})
	VZEROUPPER()
	RET()
	return name
}

// f16WideTile emits the tile of rgs groups of 4 weight rows × toks tokens
// over ns steps of sixteen values. wf: the widened rows, f16WideWRow
// floats apart; a: the tokens' widened values as [step][token][16]; acc:
// each group's accumulators as [row][token][16], one group after another,
// loaded (zeroed when zero is set), advanced and stored back, or with dst
// set reduced and stored as dst[t·dstStride/4 + r]. With in set
// the tile first widens the rows from w16 (binary16, w16Stride bytes
// apart) into wf, prefetching the next k-block of each row.
func f16WideTile(v variant, toks int, in bool) string {
	kind := ""
	if in {
		kind = "In"
	}
	name := fmt.Sprintf("gemmF16Wide%s%dx%d%s", kind, gemmRows, toks, v.suffix)
	TEXT(name, NOSPLIT, f16WideSig)
	what := "widened F16 weight rows (wf)"
	if in {
		what = "F16 weight rows (w16, widened into wf)"
	}
	Doc(fmt.Sprintf("%s adds ns steps of sixteen values of rgs groups of %d %s", name, gemmRows, what),
		fmt.Sprintf("times %d tokens (a, [step][token][16]) into the sixteen-lane accumulators", toks),
		"at acc ([group][row][token][16]; zeroed first if zero); with dst set, the last",
		"k-block's, it stores the reduced sums at dst[t·dstStride/4 + r] instead.")
	const rowBytes = 4 * f16WideWRow
	rgs := Load(Param("rgs"), GP64())
	wf := Load(Param("wf"), GP64())
	accp := Load(Param("acc"), GP64())
	dst := Load(Param("dst"), GP64())
	var w16, stride Register
	if in {
		w16 = Load(Param("w16"), GP64())
		stride = Load(Param("w16Stride"), GP64())
	}
	acc := make([][]VecVirtual, gemmRows)
	for r := range acc {
		acc[r] = make([]VecVirtual, toks)
		for t := range acc[r] {
			acc[r][t] = ZMM()
		}
	}
	Label("group")
	zero := Load(Param("zero"), GP8())
	TESTB(zero, zero)
	JNZ(LabelRef("zero"))
	for r := range acc {
		for t, z := range acc[r] {
			VMOVUPS(Mem{Base: accp, Disp: 64 * (r*toks + t)}, z)
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
		x := make([]VecVirtual, toks)
		for t := range x {
			x[t] = ZMM()
			VMOVUPS(Mem{Base: a, Disp: 64 * t}, x[t])
		}
		for r := range acc {
			y := ZMM()
			wm := Mem{Base: wf, Index: off, Scale: 1, Disp: r * rowBytes}
			if in {
				// Widen, use, and keep for the later tiles.
				PREFETCHT0(rows.mem(r, 2*f16WideK))
				VCVTPH2PS(rows.mem(r, 0), y)
				VMOVUPS(y, wm)
			} else {
				VMOVUPS(wm, y)
			}
			for t := range x {
				VFMADD231PS(x[t], y, acc[r][t])
			}
		}
		if in {
			rows.advance(32)
		}
		ADDQ(U8(64), off)
		ADDQ(U32(64*toks), a)
	})
	// The last k-block (dst set) reduces the accumulators as
	// _mm512_reduce_add_ps does and stores the sums, dst[t·dstStride/4 +
	// r] for each group's rows; the others store the accumulators.
	TESTQ(dst, dst)
	JZ(LabelRef("keep"))
	stride4 := Load(Param("dstStride"), GP64())
	out := GP64()
	MOVQ(dst, out)
	for t := range toks {
		col := make([]VecVirtual, gemmRows)
		for r := range col {
			col[r] = foldZmm(acc[r][t])
		}
		VMOVUPS(reduce4(v, col), Mem{Base: out})
		if t+1 < toks {
			ADDQ(stride4, out)
		}
	}
	ADDQ(U8(4*gemmRows), dst)
	JMP(LabelRef("next"))
	Label("keep")
	for r := range acc {
		for t, z := range acc[r] {
			VMOVUPS(z, Mem{Base: accp, Disp: 64 * (r*toks + t)})
		}
	}
	Label("next")
	ADDQ(U32(64*gemmRows*toks), accp)
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
