package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Flash attention's scores over a binary16 K cache kept in blocks of
// flashKBlock cells (backends/cpu flash.go): within a block, each value
// of a row of K (one per KV head and dimension) holds its 16 cells side
// by side, 32 bytes. Cells then sit in vector lanes: the score of query
// head h against 16 cells is Σ_d q_h[d]·K[d][cells], one FMA per
// dimension with q_h[d] broadcast, no horizontal sums. Each lane sums
// its products in dimension order; q and K are binary16 values, so every
// product is exact in float32 and the sum is the one simd.FlashScoresF16
// computes in Go.

// cFlashFifteen is VPERMPS's index of lane 15.
var cFlashFifteen = constVec("flashFifteen", 15)

// flashKBlock is the cells of one block of the transposed K layout.
const flashKBlock = 16

// flashScoreHeads is the most query heads one score kernel of v takes:
// each head keeps 4 vectors of sums (AVX-512: 16 accumulators, 4 K
// vectors and 4 broadcasts; AVX2: 8 + 4 + 2 of 16 registers).
func flashScoreHeads(v variant) int {
	if v.vnni {
		return 4
	}
	return 2
}

// genFlashScores emits flashScoresF16x<h> and flashScoresF32x<h> for h =
// 1…flashScoreHeads(v).
func genFlashScores(v variant, reg *registry) {
	var f16, f32 []string
	for h := 1; h <= flashScoreHeads(v); h++ {
		f16 = append(f16, genFlashScore(v, h, false))
		f32 = append(f32, genFlashScore(v, h, true))
	}
	reg.flashScores(v, f16, f32)
}

// genFlashScore emits one score kernel: nc chunks of 4 vectors of cells
// (64 cells on AVX-512, 32 on AVX2) for heads query heads of hd ≥ 1
// values. The queries are transposed, q[d·qStride/4 + h] (the heads of
// one dimension side by side), so that one pointer walks them; head h's
// scores go to dst + h·dstStride. wide: the K panel holds float32 values
// (a tile's binary16 K widened once for many heads, simd.FlashWidenK), in
// the same layout, read without conversions and without prefetching (it
// sits in L1).
func genFlashScore(v variant, heads int, wide bool) string {
	kind, es := "F16", 2 // the K element and its bytes
	if wide {
		kind, es = "F32", 4
	}
	name := fname(fmt.Sprintf("flashScores%sx%d", kind, heads), v)
	lanes := flashTileLanes(v)
	TEXT(name, NOSPLIT, "func(nc int, hd int, k *byte, blockStride int, q *float32, qStride int, dst *float32, dstStride int)")
	Doc(fmt.Sprintf("%s sets the raw scores of %d query heads against nc chunks of %d", name, heads, 4*lanes),
		fmt.Sprintf("cells of a transposed %s K panel (blocks of 16 cells blockStride bytes apart),", kind),
		"each lane summing its exact products in dimension order.")
	nc := Load(Param("nc"), GP64())
	// The four vectors' addresses at dimension 0: AVX-512 reads four
	// blocks, AVX2 the two halves of two blocks.
	kv := make([]Register, 4)
	kv[0] = Load(Param("k"), GP64())
	for i := 1; i < 4; i++ {
		kv[i] = GP64()
	}
	step := Load(Param("blockStride"), GP64()) // then: bytes from one chunk to the next
	if lanes == 16 {
		LEAQ(Mem{Base: kv[0], Index: step, Scale: 1}, kv[1])
		LEAQ(Mem{Base: kv[0], Index: step, Scale: 2}, kv[2])
		LEAQ(Mem{Base: kv[1], Index: step, Scale: 2}, kv[3])
		SHLQ(U8(2), step) // 4 blocks
	} else {
		LEAQ(Mem{Base: kv[0], Disp: 8 * es}, kv[1])
		LEAQ(Mem{Base: kv[0], Index: step, Scale: 1}, kv[2])
		LEAQ(Mem{Base: kv[2], Disp: 8 * es}, kv[3])
		SHLQ(U8(1), step) // 2 blocks
	}
	dst := Load(Param("dst"), GP64())
	vec := func() VecVirtual {
		if lanes == 16 {
			return ZMM()
		}
		return YMM()
	}
	acc := make([][]VecVirtual, heads)
	for h := range acc {
		for range 4 {
			acc[h] = append(acc[h], vec())
		}
	}
	qs := Load(Param("qStride"), GP64())
	TESTQ(nc, nc)
	JZ(LabelRef("done"))
	Label("chunk")
	for h := range acc {
		for _, a := range acc[h] {
			VXORPS(a, a, a)
		}
	}
	d := Load(Param("hd"), GP64())
	qp := Load(Param("q"), GP64())
	koff := GP64()
	XORQ(koff, koff)
	Label("dim")
	kx := make([]VecVirtual, 4)
	for i := range kx {
		kx[i] = vec()
		if wide {
			VMOVUPS(Mem{Base: kv[i], Index: koff, Scale: 1}, kx[i])
		} else {
			VCVTPH2PS(Mem{Base: kv[i], Index: koff, Scale: 1}, kx[i])
		}
	}
	if !wide {
		// The next chunk's K: at depth a decode token reads every
		// layer's cache once, from memory.
		next := GP64()
		for i := range kv {
			LEAQ(Mem{Base: kv[i], Index: step, Scale: 1}, next)
			PREFETCHT0(Mem{Base: next, Index: koff, Scale: 1})
		}
	}
	for h := range acc {
		b := vec()
		VBROADCASTSS(Mem{Base: qp, Disp: 4 * h}, b)
		for i := range kx {
			VFMADD231PS(b, kx[i], acc[h][i])
		}
	}
	ADDQ(U32(es*flashKBlock), koff)
	ADDQ(qs, qp)
	DECQ(d)
	JNZ(LabelRef("dim"))
	dp := GP64()
	MOVQ(dst, dp)
	for h := range acc {
		if h > 0 {
			ds := Load(Param("dstStride"), GP64())
			ADDQ(ds, dp)
		}
		for i, a := range acc[h] {
			VMOVUPS(a, Mem{Base: dp, Disp: 4 * lanes * i})
		}
	}
	ADDQ(U32(16*lanes), dst)
	for i := range kv {
		ADDQ(step, kv[i])
	}
	DECQ(nc)
	JNZ(LabelRef("chunk"))
	Label("done")
	VZEROUPPER()
	RET()
	return name
}

// paramAddr is the stack address of a scalar argument or result: read
// and written with VEX instructions, as avo's Load and Store would with
// legacy SSE ones (MOVSS) while the kernel's vector state is dirty.
func paramAddr(c gotypes.Component) Mem {
	b, err := c.Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// genFlashScan emits flashScanAVX512 (AVX-512 only; AVX2 keeps the Go
// loop): the online softmax's running maximum over ng groups of 16
// scores, ops/ref's sequential rule in a log-step scan. Lane j needs the
// maximum before it, max(m, x_0…x_{j−1}), where the maximum moves only
// when x > max: of equal values (+0 and −0) the earliest stays, and a
// NaN never takes it. VMAXPS(a, b) returns b unless a > b, so with the
// later value as a and the earlier as b, and NaN scores first replaced by
// −∞ (which never moves a maximum either), each step of the scan keeps
// ref's choice: the inclusive maxima by four shifts (1, 2, 4, 8 lanes,
// −∞ shifted in), then m folded in as the earliest value, then one more
// shift with m in lane 0 for the maximum before each lane. The argument
// stored is −(max − x), from the unreplaced x, as ref computes it.
func genFlashScan(v variant, reg *registry) {
	if !v.vnni {
		reg.flashScan(v, "")
		return
	}
	name := fname("flashScan", v)
	TEXT(name, NOSPLIT, "func(ng int, s *float32, scale float32, maxv float32, arg *float32) float32")
	Doc(name+" sets arg[j] = −(max_j − s[j]·scale) over ng groups of 16 scores, max_j the",
		"running maximum of the scaled scores before j (maxv before the first), and returns",
		"the maximum after the last.")
	ng := Load(Param("ng"), GP64())
	sp := Load(Param("s"), GP64())
	ap := Load(Param("arg"), GP64())
	sc, m, ninf, sign := ZMM(), ZMM(), ZMM(), ZMM()
	VBROADCASTSS(paramAddr(Param("scale")), sc)
	VBROADCASTSS(paramAddr(Param("maxv")), m)
	VBROADCASTSS(cNegInf, ninf)
	VPBROADCASTD(cFExpSign, sign)
	last := ZMM() // VPERMPS index: lane 15 everywhere
	VPBROADCASTD(cFlashFifteen, last)
	loopBlocks(ng, func() {
		x, p := ZMM(), ZMM()
		VMULPS(Mem{Base: sp}, sc, x)
		VMAXPS(ninf, x, p) // x, or −∞ for NaN
		for _, k := range []int{1, 2, 4, 8} {
			t := ZMM()
			VALIGND(U8(16-k), ninf, p, t) // t[j] = p[j−k], −∞ below k
			VMAXPS(t, p, p)
		}
		VMAXPS(m, p, p) // m is earlier than every lane
		e := ZMM()
		VALIGND(U8(15), m, p, e) // e[j] = p[j−1], m in lane 0
		VSUBPS(x, e, e)          // max − x
		VXORPS(sign, e, e)
		VMOVUPS(e, Mem{Base: ap})
		VPERMPS(p, last, m)
		ADDQ(U32(64), sp)
		ADDQ(U32(64), ap)
	})
	VMOVSS(m.AsX(), paramAddr(ReturnIndex(0)))
	VZEROUPPER()
	RET()
	reg.flashScan(v, name)
}
