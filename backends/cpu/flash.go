package cpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// Flash attention (backends.StateOptions.FlashAttn), llama.cpp's -fa:
// one pass over a query's visible KV cells with an online softmax, no
// score row kept (ref.FlashAttention has the numerics and their
// reasons). Under it V is row-major, one row of kvHeads·headDim values
// per position, in the cache type's encoding (binary16 or Q8_0/Q4_0
// blocks): llama.cpp keeps V untransposed with -fa, and a quantized V has
// to be, since its blocks run along a row. A quantized K is row-major
// too (the integer GEMM scores it); a binary16 K is kept in blocks of
// simd.FlashKBlock cells, each value of a row holding its block's cells
// side by side (kOffset), so that the score kernels hold cells in vector
// lanes: no horizontal sums, and the scores of a tile come out as rows
// the online softmax reads in order (simd.FlashScoresF16).

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

// newFlashKVCache is newKVCache for flash attention: V row-major in type
// t, K too or, binary16, in blocks of cells (see above).
func newFlashKVCache(kvHeads, headDim, ctx int, t KVType) *kvCache {
	c := &kvCache{kvHeads: kvHeads, headDim: headDim, ctx: ctx, flash: true, kt: t, f16: t == KVF16}
	c.rowBytes = kvRowBytes(t, c.width())
	c.kq, c.vq = make([]byte, flashKCells(ctx, t)*c.rowBytes), make([]byte, ctx*c.rowBytes)
	if t == KVF16 {
		c.kRow = make([]byte, c.rowBytes)
	}
	return c
}

// flashKCells is the cells a flash cache's K holds for a context of ctx:
// a binary16 K is read by its score kernels in whole tiles of flashTile
// cells (simd.FlashScoreChunk), so it is allocated in whole tiles.
func flashKCells(ctx int, t KVType) int {
	if t != KVF16 {
		return ctx
	}
	return (ctx + flashTile - 1) / flashTile * flashTile
}

// flashKBytes is the bytes of a flash K that hold cells [0, n): whole
// blocks of cells for a binary16 K.
func flashKBytes(n int, t KVType, rowBytes int) int {
	if t == KVF16 {
		n = (n + simd.FlashKBlock - 1) / simd.FlashKBlock * simd.FlashKBlock
	}
	return n * rowBytes
}

// kOffset is the byte offset of value i (KV head i/headDim, dimension
// i%headDim) of cell p in a binary16 flash K.
func (c *kvCache) kOffset(p, i int) int {
	const b = simd.FlashKBlock
	return p/b*b*c.rowBytes + 2*(b*i+p%b)
}

// storeFlash writes one token's K and V rows at pos: binary16 rounded to
// nearest even, or quantized as ggml_cpy does (ref.StoreQuantRow).
func (c *kvCache) storeFlash(pos int, k, v []float32) {
	w, rb := c.width(), c.rowBytes
	vd := c.vq[pos*rb : (pos+1)*rb]
	if c.kt == KVF16 {
		toF16 := simd.QuantizeRow(gguf.TypeF16)
		toF16(k[:w], c.kRow)
		base := c.kOffset(pos, 0)
		for i := range w {
			c.kq[base+2*simd.FlashKBlock*i] = c.kRow[2*i]
			c.kq[base+2*simd.FlashKBlock*i+1] = c.kRow[2*i+1]
		}
		toF16(v[:w], vd)
		return
	}
	kd := c.kq[pos*rb : (pos+1)*rb]
	t := kvElemType(c.kt)
	ref.StoreQuantRow(t, k[:w], kd)
	ref.StoreQuantRow(t, v[:w], vd)
}

// headBytes is the offset of KV head g within a row.
func (c *kvCache) headBytes(g int) int { return kvRowBytes(c.kt, g*c.headDim) }

// flashTile is how many cells the tiled path scores and folds at a time:
// a multiple of 4 (the GEMM's rows per call) and of simd.FlashScoreChunk
// (the binary16 score kernels compute whole chunks from a tile's start,
// TestFlashTileWholeChunks), small enough that a tile's K and V rows stay
// in L1 between the scoring and the folding.
const flashTile = 64

// flashTokens is the most consecutive tokens of one prompt whose flash
// attention runs together (flashBlock): their query heads share every
// K and V tile read, which at long contexts (a KV head's K and V outgrow
// L2 from a few thousand cells) is the difference between reading the
// cache once per token and once per block.
const flashTokens = 16

// flashBuf is one worker's flash scratch for up to rows query rows (the
// heads of a block of tokens of one KV head): the converted queries
// (binary16 or Q8_0 bytes, and for a binary16 K their values as float32,
// transposed), their accumulators, running maxima and sums, a widened V
// row, and a tile's scores, exponentials' arguments and signed results,
// and padded K rows.
type flashBuf struct {
	q         []byte
	qf        []float32 // [headDim][nq]: a binary16 K's queries (simd.FlashScoresF16)
	nq        int       // rows converted (qf's stride)
	acc, row  []float32
	maxv, sum []float32
	scores    []float32 // [rows][flashTile], from the rows of one scoreTile
	arg, ex   []float32 // [rows·n]: row i's cells at i·n… (see foldTile)
	vf        []float32 // [flashTile][headDim]: a V tile widened (foldTile)
	kf        []float32 // a K tile widened (scoreTile, simd.FlashWidenK)
	pad       []byte    // 4 K head rows
}

// flashQueryBytes is the most bytes one converted query head takes.
func flashQueryBytes(headDim int) int { return max(2*headDim, (headDim+31)/32*34) }

// flashBufBytes is what newFlashBuf allocates.
func flashBufBytes(rows, headDim int) int64 {
	g, hd, qb, t := int64(rows), int64(headDim), int64(flashQueryBytes(headDim)), int64(flashTile)
	return (g+4)*qb + 4*(2*g*hd+hd+2*g+3*g*t+2*t*hd)
}

func newFlashBuf(rows, headDim int) flashBuf {
	qb, gt := flashQueryBytes(headDim), rows*flashTile
	return flashBuf{
		q: make([]byte, rows*qb), qf: make([]float32, rows*headDim),
		acc: make([]float32, rows*headDim), row: make([]float32, headDim),
		maxv: make([]float32, rows), sum: make([]float32, rows),
		scores: make([]float32, gt), arg: make([]float32, gt), ex: make([]float32, gt),
		vf: make([]float32, flashTile*headDim), kf: make([]float32, flashTile*headDim),
		pad: make([]byte, 4*qb),
	}
}

// queryBytes is the size of one converted query head.
func (c *kvCache) queryBytes() int {
	if c.kt == KVF16 {
		return 2 * c.headDim
	}
	return c.headDim / 32 * 34
}

// convertQueries converts query heads [h0, h1) of the n tokens t0… of q
// to the K cache's dot type (ggml's q_to_vec_dot), row i·(h1−h0) + h−h0
// for head h of token t0+i: binary16 into b.q and, as float32 values
// transposed, into b.qf; or Q8_0 blocks into b.q, queryBytes apart.
func (c *kvCache) convertQueries(q []float32, t0, n, h0, h1 int, sh attnShape, b *flashBuf) {
	hd, qb, nh := c.headDim, c.queryBytes(), h1-h0
	b.nq = n * nh
	for r := range b.nq {
		off := ((t0+r/nh)*sh.heads + h0 + r%nh) * hd
		src, dst := q[off:off+hd], b.q[r*qb:(r+1)*qb]
		if c.kt != KVF16 {
			ref.QuantizeRowQ8_0(src, dst)
			continue
		}
		simd.QuantizeRow(gguf.TypeF16)(src, dst)
		c.widenQuery(dst, r, b)
	}
}

// widenQuery sets row r of b.qf from its binary16 bytes q.
func (c *kvCache) widenQuery(q []byte, r int, b *flashBuf) {
	for d := range c.headDim {
		b.qf[d*b.nq+r] = quant.FP16ToFP32(uint16(q[2*d]) | uint16(q[2*d+1])<<8)
	}
}

// flashScore is the raw score of converted query q against K cell p of KV
// head g, as the kernel computes it: every score of a cache goes through
// the same summation (simd.FlashScoresF16's for a binary16 K, the GEMM's
// for a quantized one, scoreTile's padding included), so a score never
// depends on the batch, the tile, the block or the thread that computed
// it.
func (c *kvCache) flashScore(p, g int, q []byte) float32 {
	b := newFlashBuf(1, c.headDim)
	copy(b.q, q)
	b.nq = 1
	if c.kt != KVF16 {
		c.scoreTile(g, p, 0, 1, 0, 1, &b)
		return b.scores[0]
	}
	c.widenQuery(q, 0, &b)
	p0 := p &^ (flashTile - 1)
	c.scoreTile(g, p0, 0, p-p0+1, 0, 1, &b)
	return b.scores[p-p0]
}

// scoreTile sets b.scores[i·flashTile + j], i < nh and lo ≤ j < hi ≤
// flashTile, to the raw score of converted query row r0+i against K cell
// p0+j of KV head g. A binary16 K is scored by simd.FlashScoresF16 from
// the tile's start, p0 a multiple of flashTile (cells before lo are
// scored and not read). A quantized K goes to the GEMM in whole groups
// of 4 rows, the last group copied into b.pad with zero rows after it,
// so that every row takes the GEMM's tile kernel (its leftover rows
// would take the dot kernel, which sums in another order).
func (c *kvCache) scoreTile(g, p0, lo, hi, r0, nh int, b *flashBuf) {
	hd, rb := c.headDim, c.rowBytes
	if c.kt == KVF16 {
		blockStride, k := simd.FlashKBlock*rb, c.kq[c.kOffset(p0, g*hd):]
		if nh >= flashWidenRows && simd.FlashWidenK(k, blockStride, hi, hd, b.kf) {
			simd.FlashScoresF32(hd, b.kf, hi, b.qf[r0:], b.nq, nh, b.scores, flashTile)
			return
		}
		simd.FlashScoresF16(hd, k, blockStride, hi, b.qf[r0:], b.nq, nh, b.scores, flashTile)
		return
	}
	p0, n, dst := p0+lo, hi-lo, b.scores[lo:]
	qb, hb := c.queryBytes(), c.headBytes(g)
	qc := b.q[r0*qb : (r0+nh)*qb]
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

// flashHeads is attendHeads under flash attention: flashBlock for one
// token.
func (c *kvCache) flashHeads(out, q []float32, t, pos, h0, h1 int, sh attnShape, b *flashBuf) {
	c.flashBlock(out, q, t, 1, pos, h0, h1, sh, b)
}

// flashBlock computes query heads [h0, h1) (of one KV head) of the n
// batch tokens t0… at positions pos… of this cache's sequence, a tile of
// cells at a time: one kernel call scores the tile for every row (a
// token's head; each K row read once for them all), then each row folds
// the tile in cell order: scale and soft-cap, the running maximum
// (simd.FlashScan), the exponentials (simd.FlashExp, ref's expf bits),
// the running sum and the accumulator updates (simd.FlashUpdate), with
// ref.FlashAttention's arithmetic in ref's order. Only the scores'
// summation differs (flashScore). The tiles every token sees whole are
// taken by all rows together, the rest token by token; a row meets the
// same tiles in the same order whatever the block, so its bits do not
// depend on it. A sliding window (first cells differing per token) runs
// token by token.
func (c *kvCache) flashBlock(out, q []float32, t0, n, pos, h0, h1 int, sh attnShape, b *flashBuf) {
	if n > 1 && sh.window > 0 {
		for i := range n {
			c.flashBlock(out, q, t0+i, 1, pos+i, h0, h1, sh, b)
		}
		return
	}
	hd, nh := c.headDim, h1-h0
	g := h0 / (sh.heads / sh.kvHeads)
	c.convertQueries(q, t0, n, h0, h1, sh, b)
	rows := n * nh
	clear(b.acc[:rows*hd])
	for r := range rows {
		b.sum[r], b.maxv[r] = 0, float32(math.Inf(-1))
	}
	shared := 0 // cells [0, shared): whole tiles every token sees
	if n > 1 {
		shared = (pos + 1) &^ (flashTile - 1)
	}
	for p0 := 0; p0 < shared; p0 += flashTile {
		c.scoreTile(g, p0, 0, flashTile, 0, rows, b)
		c.foldTile(g, p0, 0, flashTile, 0, rows, sh, b)
	}
	for i := range n {
		last := pos + i
		first := max(shared, sh.first(last))
		start := first
		if c.kt == KVF16 {
			start = first &^ (flashTile - 1) // its score kernels start at a tile
		}
		for p0 := start; p0 <= last; p0 += flashTile {
			lo, hi := max(0, first-p0), min(flashTile, last+1-p0)
			c.scoreTile(g, p0, lo, hi, i*nh, nh, b)
			c.foldTile(g, p0, lo, hi, i*nh, nh, sh, b)
		}
	}
	for r := range rows {
		inv := 1 / b.sum[r]
		off := ((t0+r/nh)*sh.heads + h0 + r%nh) * hd
		o := out[off : off+hd]
		for k, a := range b.acc[r*hd : (r+1)*hd] {
			o[k] = a * inv
		}
	}
}

// foldTile runs the online softmax of rows [r0, r0+nh) over the tile's
// scores of cells [p0+lo, p0+hi) of KV head g: ref's flashHead loop, split into passes
// that each run in cell order per head. The first scales (and caps) the
// scores and follows the running maximum (simd.FlashScan), leaving per cell
// the argument of its one exponential, signed: > 0 where the cell raises
// the maximum (ref: ms = expf(max − x)), else ≤ 0 (ref: vs = expf(x −
// max)). Negation and x − max = −(max − x) are exact, so expf(−|a|) is
// ref's value either way. Then the weights (simd.FlashExp), then the
// accumulators and sums (simd.FlashUpdate).
func (c *kvCache) foldTile(g, p0, lo, hi, r0, nh int, sh attnShape, b *flashBuf) {
	n := hi - lo
	scale := sh.scale
	if sh.softCap > 0 {
		scale /= sh.softCap
	}
	for i := range nh {
		arg, scores, k := b.arg[i*n:(i+1)*n], b.scores[i*flashTile+lo:i*flashTile+hi], scale
		if sh.softCap > 0 {
			for j, s := range scores {
				arg[j] = sh.softCap * float32(math.Tanh(float64(s*scale)))
			}
			scores, k = arg, 1 // x·1 is x
		}
		b.maxv[r0+i] = simd.FlashScan(arg, scores, k, b.maxv[r0+i])
	}
	// Whole groups of 16 for the vector kernel: the padding's weights
	// (exp 0) are not read.
	m := (nh*n + 15) &^ 15
	clear(b.arg[nh*n : m])
	simd.FlashExp(b.arg[:m], b.ex[:m])
	hd, hb := c.headDim, c.headBytes(g)
	vt, v, vStride := kvElemType(c.kt), c.vq[(p0+lo)*c.rowBytes+hb:], c.rowBytes
	if c.kt == KVF16 && nh >= flashWidenRows && simd.FlashWidenF16(v, vStride, n, hd, b.vf) {
		vt, v, vStride = gguf.TypeF32, floatBytes(b.vf[:n*hd]), 4*hd
	}
	half := c.kt == KVF16 && !c.f32Acc // ggml's binary16 accumulator
	simd.FlashUpdate(vt, half, b.acc[r0*hd:(r0+nh)*hd], hd, v, vStride, n, b.ex, n, b.sum[r0:r0+nh], b.row)
}

// flashWidenRows is the fewest rows for which scoreTile and foldTile
// widen a binary16 K or V tile to float32 first (simd.FlashWidenK,
// FlashWidenF16): the kernels take a few heads a call, each converting
// the rows it reads, so for a block of tokens' heads (a prompt's: 16
// tokens' worth) one conversion replaces dozens; for a decode token's
// heads (two or three calls) it would not pay. The bits are the same
// either way (the widening is exact).
const flashWidenRows = 9

// floatBytes is f's memory as bytes (the layout FlashUpdate's F32 V
// rows have: little-endian float32).
func floatBytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}
