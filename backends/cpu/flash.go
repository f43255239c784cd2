package cpu

import (
	"fmt"
	"math"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// Flash attention (backends.StateOptions.FlashAttn), llama.cpp's -fa:
// one pass over a query's visible KV cells with an online softmax, no
// score row kept (ref.FlashAttention has the numerics and their
// reasons). Under it both caches are row-major, one row of
// kvHeads·headDim values per position, in the cache type's encoding
// (binary16 or Q8_0/Q4_0 blocks): llama.cpp keeps V untransposed with
// -fa, and a quantized V has to be, since its blocks run along a row.

// kvElemType is the GGUF type a KV type's rows are stored in.
func kvElemType(t KVType) gguf.TensorType {
	switch t {
	case backends.KVQ8_0:
		return gguf.TypeQ8_0
	case backends.KVQ4_0:
		return gguf.TypeQ4_0
	case KVF32:
		return gguf.TypeF32
	}
	return gguf.TypeF16
}

// kvRowBytes is the size of one cache row of width values of type t.
func kvRowBytes(t KVType, width int) int {
	n, _ := kvElemType(t).RowBytes(uint64(width))
	return int(n)
}

// checkFlash refuses what llama.cpp's CPU flash attention cannot run or
// what weft does not mirror: a quantized cache whose heads are not whole
// 32-value blocks (llama.cpp asserts n_embd_head_k % blck_size == 0).
func checkFlash(t KVType, headDim int) error {
	if (t == backends.KVQ8_0 || t == backends.KVQ4_0) && headDim%32 != 0 {
		return fmt.Errorf("a %s KV cache stores blocks of 32 values, and this model's attention heads have %d: use --kv-type f16 (llama.cpp refuses it too)", t, headDim)
	}
	return nil
}

// newFlashKVCache is newKVCache for flash attention: K and V row-major in
// type t.
func newFlashKVCache(kvHeads, headDim, ctx int, t KVType) *kvCache {
	c := &kvCache{kvHeads: kvHeads, headDim: headDim, ctx: ctx, flash: true, kt: t, f16: t == KVF16}
	c.rowBytes = kvRowBytes(t, c.width())
	c.kq, c.vq = make([]byte, ctx*c.rowBytes), make([]byte, ctx*c.rowBytes)
	return c
}

// storeFlash writes one token's K and V rows at pos: binary16 rounded to
// nearest even, or quantized as ggml_cpy does (ref.StoreQuantRow).
func (c *kvCache) storeFlash(pos int, k, v []float32) {
	w, rb := c.width(), c.rowBytes
	kd, vd := c.kq[pos*rb:(pos+1)*rb], c.vq[pos*rb:(pos+1)*rb]
	if c.kt == KVF16 {
		toF16 := simd.QuantizeRow(gguf.TypeF16)
		toF16(k[:w], kd)
		toF16(v[:w], vd)
		return
	}
	t := kvElemType(c.kt)
	ref.StoreQuantRow(t, k[:w], kd)
	ref.StoreQuantRow(t, v[:w], vd)
}

// headBytes is the offset of KV head g within a row.
func (c *kvCache) headBytes(g int) int { return kvRowBytes(c.kt, g*c.headDim) }

// flashTile is how many cells the tiled path scores and folds at a time:
// a multiple of 4 (the GEMM's rows per call), small enough that a tile's
// K and V rows stay in L1 between the scoring and the folding.
const flashTile = 64

// flashBuf is one worker's flash scratch: the converted queries of up to
// a KV head's query heads (binary16 or Q8_0), their accumulators, running
// maxima and sums, a widened V row, and the tiled path's scores,
// exponentials' arguments and signed results, and padded K rows.
type flashBuf struct {
	q         []byte
	acc, row  []float32
	maxv, sum []float32
	scores    []float32 // [group][flashTile]
	arg, ex   []float32 // [group·n]: head i's cells at i·n… (see foldTile)
	pad       []byte    // 4 K head rows
}

// flashQueryBytes is the most bytes one converted query head takes.
func flashQueryBytes(headDim int) int { return max(2*headDim, (headDim+31)/32*34) }

// flashBufBytes is what newFlashBuf allocates.
func flashBufBytes(group, headDim int) int64 {
	g, hd, qb, t := int64(group), int64(headDim), int64(flashQueryBytes(headDim)), int64(flashTile)
	return (g+4)*qb + 4*(g*hd+hd+2*g+3*g*t)
}

func newFlashBuf(group, headDim int) flashBuf {
	qb, gt := flashQueryBytes(headDim), group*flashTile
	return flashBuf{
		q: make([]byte, group*qb), acc: make([]float32, group*headDim), row: make([]float32, headDim),
		maxv: make([]float32, group), sum: make([]float32, group),
		scores: make([]float32, gt), arg: make([]float32, gt), ex: make([]float32, gt),
		pad: make([]byte, 4*qb),
	}
}

// convertQuery converts query head qh to the K cache's dot type into
// b.q (ggml's q_to_vec_dot) and returns it.
func (c *kvCache) convertQuery(qh []float32, b *flashBuf) []byte {
	return c.convertInto(qh, b.q)
}

// queryBytes is the size of one converted query head.
func (c *kvCache) queryBytes() int {
	if c.kt == KVF16 {
		return 2 * c.headDim
	}
	return c.headDim / 32 * 34
}

// convertInto converts query head qh into the start of dst and returns
// that part.
func (c *kvCache) convertInto(qh []float32, dst []byte) []byte {
	q := dst[:c.queryBytes()]
	if c.kt == KVF16 {
		simd.QuantizeRow(gguf.TypeF16)(qh, q)
		return q
	}
	ref.QuantizeRowQ8_0(qh, q)
	return q
}

// tiled reports whether this cache takes the tiled path (flashHeadsTiled):
// scores by the GEMM, whose every (cell, head) pair sums in one order.
// An F16 head dimension that is not whole GEMM chunks keeps the per-cell
// path, whose tail summed in float64 gives ggml_vec_dot_f16's exact
// scores (see f16DotBlock).
func (c *kvCache) tiled() bool { return c.kt != KVF16 || c.headDim%f16GemmChunk == 0 }

// flashScore is the raw score of converted query q against K row p of KV
// head g, as the kernel computes it: every score of a cache goes through
// the same summation (the GEMM's for a tiled cache, scoreTile's padding
// included; else score's), so a score never depends on the batch, the
// tile or the thread that computed it.
func (c *kvCache) flashScore(p, g int, q []byte) float32 {
	if !c.tiled() {
		return c.score(simd.VecDot(kvElemType(c.kt)), p, c.headBytes(g), q)
	}
	b := newFlashBuf(1, c.headDim)
	c.scoreTile(g, p, 1, q, len(q), 1, b.scores, &b)
	return b.scores[0]
}

// scoreTile sets dst[i·flashTile + j] to the raw score of query i (nh of
// them, qb bytes apart in qc) against K row p0+j of KV head g, j < n ≤
// flashTile. Rows go to the GEMM in whole groups of 4, the last group
// copied into b.pad with zero rows after it, so that every row takes the
// GEMM's tile kernel (its leftover rows would take the dot kernel, which
// sums in another order).
func (c *kvCache) scoreTile(g, p0, n int, qc []byte, qb, nh int, dst []float32, b *flashBuf) {
	hd, rb, hb := c.headDim, c.rowBytes, c.headBytes(g)
	gemm := simd.Gemm(kvElemType(c.kt))
	full := n &^ 3
	if full > 0 {
		gemm(hd, c.kq[p0*rb+hb:], rb, full, qc, qb, nh, dst, flashTile)
	}
	rest := n - full
	if rest == 0 {
		return
	}
	kb := kvRowBytes(c.kt, hd)
	pad := b.pad[:4*kb]
	for r := range rest {
		copy(pad[r*kb:(r+1)*kb], c.kq[(p0+full+r)*rb+hb:])
	}
	clear(pad[rest*kb:])
	gemm(hd, pad, kb, 4, qc, qb, nh, dst[full:], flashTile)
}

// score is flashScore with the dot kernel and the head's byte offset in
// a row looked up once.
func (c *kvCache) score(dot simd.DotFunc, p, hb int, q []byte) float32 {
	hd := c.headDim
	row := c.kq[p*c.rowBytes+hb:]
	if c.kt != KVF16 {
		return dot(hd, row, q)
	}
	body := hd / f16DotBlock * f16DotBlock
	var s float32
	if body > 0 {
		s = dot(body, row, q)
	}
	if body == hd {
		return s
	}
	sum := float64(s)
	for i := body; i < hd; i++ {
		x := quant.FP16ToFP32(uint16(q[2*i]) | uint16(q[2*i+1])<<8)
		y := quant.FP16ToFP32(uint16(row[2*i]) | uint16(row[2*i+1])<<8)
		sum += float64(x * y)
	}
	return float32(sum)
}

// flashHeads is attendHeads under flash attention: each query head of
// [h0, h1) of token t at position pos runs the online softmax over its
// visible cells in order, with ref.FlashAttention's arithmetic (only the
// score dot products' summation order differs: flashScore).
func (c *kvCache) flashHeads(out, q []float32, t, pos, h0, h1 int, sh attnShape, b *flashBuf) {
	if c.tiled() {
		c.flashHeadsTiled(out, q, t, pos, h0, h1, sh, b)
		return
	}
	hd := c.headDim
	g := h0 / (sh.heads / sh.kvHeads)
	first := sh.first(pos)
	scale := sh.scale
	if sh.softCap > 0 {
		scale /= sh.softCap
	}
	dot, hb := simd.VecDot(kvElemType(c.kt)), c.headBytes(g)
	for h := h0; h < h1; h++ {
		off := (t*sh.heads + h) * hd
		qc := c.convertQuery(q[off:off+hd], b)
		acc := b.acc[:hd]
		clear(acc)
		sum, maxv := float32(0), float32(math.Inf(-1))
		for p := first; p <= pos; p++ {
			x := c.score(dot, p, hb, qc) * scale
			if sh.softCap > 0 {
				x = sh.softCap * float32(math.Tanh(float64(x)))
			}
			ms, vs := float32(1), float32(1)
			if x > maxv {
				ms = float32(math.Exp(float64(maxv - x)))
				maxv = x
				ref.FlashScale(acc, ms, c.f16)
			} else {
				vs = float32(math.Exp(float64(x - maxv)))
			}
			c.madV(acc, p, hb, vs, b)
			sum = float32(sum*ms) + vs // unfused, as ggml's ISO C build
		}
		inv := 1 / sum
		o := out[off : off+hd]
		for i, a := range acc {
			o[i] = a * inv
		}
	}
}

// madV adds vs times V row p's head at byte hb to acc as ref.FlashMad
// does.
func (c *kvCache) madV(acc []float32, p, hb int, vs float32, b *flashBuf) {
	hd := c.headDim
	src := c.vq[p*c.rowBytes+hb:]
	row := b.row[:hd]
	if c.kt == KVF16 {
		simd.FlashMadF16(acc, src[:2*hd], vs, row)
		return
	}
	_ = quant.Dequantize(kvElemType(c.kt), src[:kvRowBytes(c.kt, hd)], row)
	simd.FlashMadF32(acc, row, vs)
}

// flashHeadsTiled is flashHeads a tile of cells at a time for all the
// heads [h0, h1) at once: one GEMM scores the tile for every head (each K
// row read once for the group), then each head folds the tile in cell
// order: scale and soft-cap, the running maximum, the exponentials
// (simd.FlashExp, ref's expf bits), the running sum and the accumulator
// updates (simd.FlashUpdate), with ref.FlashAttention's arithmetic in
// ref's order. Only the scores' summation differs (flashScore).
func (c *kvCache) flashHeadsTiled(out, q []float32, t, pos, h0, h1 int, sh attnShape, b *flashBuf) {
	hd, nh := c.headDim, h1-h0
	g := h0 / (sh.heads / sh.kvHeads)
	qb := c.queryBytes()
	qc := b.q[:nh*qb]
	for i := range nh {
		off := (t*sh.heads + h0 + i) * hd
		c.convertInto(q[off:off+hd], qc[i*qb:])
	}
	acc := b.acc[:nh*hd]
	clear(acc)
	for i := range nh {
		b.sum[i], b.maxv[i] = 0, float32(math.Inf(-1))
	}
	for p0 := sh.first(pos); p0 <= pos; p0 += flashTile {
		n := min(flashTile, pos+1-p0)
		c.scoreTile(g, p0, n, qc, qb, nh, b.scores, b)
		c.foldTile(g, p0, n, nh, sh, b)
	}
	for i := range nh {
		inv := 1 / b.sum[i]
		off := (t*sh.heads + h0 + i) * hd
		o := out[off : off+hd]
		for k, a := range acc[i*hd : (i+1)*hd] {
			o[k] = a * inv
		}
	}
}

// flashScan sets arg[j] to −(max − x_j), x_j = scores[j]·scale and max
// the running maximum before cell j (maxv on entry), and returns the
// maximum after the last cell. That is x − max (> 0) where the cell
// raises the maximum and ≤ 0 (−0 included) where it does not: the
// argument of the cell's one exponential, signed as simd.FlashExp passes
// it on (see foldTile). The maximum moves only when x > max, as in ref
// (a NaN never takes it).
func flashScan(arg, scores []float32, scale, maxv float32) float32 {
	arg = arg[:len(scores)]
	for j, s := range scores {
		x := s * scale
		arg[j] = -(maxv - x)
		if x > maxv {
			maxv = x
		}
	}
	return maxv
}

// foldTile runs the online softmax of heads [0, nh) over the tile's
// scores (cells p0… of KV head g): ref's flashHead loop, split into passes
// that each run in cell order per head. The first scales (and caps) the
// scores and follows the running maximum (flashScan), leaving per cell
// the argument of its one exponential, signed: > 0 where the cell raises
// the maximum (ref: ms = expf(max − x)), else ≤ 0 (ref: vs = expf(x −
// max)). Negation and x − max = −(max − x) are exact, so expf(−|a|) is
// ref's value either way. Then the weights (simd.FlashExp), then the
// accumulators and sums (simd.FlashUpdate).
func (c *kvCache) foldTile(g, p0, n, nh int, sh attnShape, b *flashBuf) {
	scale := sh.scale
	if sh.softCap > 0 {
		scale /= sh.softCap
	}
	for i := range nh {
		arg, scores, k := b.arg[i*n:(i+1)*n], b.scores[i*flashTile:i*flashTile+n], scale
		if sh.softCap > 0 {
			for j, s := range scores {
				arg[j] = sh.softCap * float32(math.Tanh(float64(s*scale)))
			}
			scores, k = arg, 1 // x·1 is x
		}
		b.maxv[i] = flashScan(arg, scores, k, b.maxv[i])
	}
	// Whole groups of 16 for the vector kernel: the padding's weights
	// (exp 0) are not read.
	m := (nh*n + 15) &^ 15
	clear(b.arg[nh*n : m])
	simd.FlashExp(b.arg[:m], b.ex[:m])
	hd, hb := c.headDim, c.headBytes(g)
	simd.FlashUpdate(kvElemType(c.kt), b.acc[:nh*hd], hd, c.vq[p0*c.rowBytes+hb:], c.rowBytes, n, b.ex, n, b.sum[:nh], b.row)
}
