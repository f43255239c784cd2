package cpu

import (
	"fmt"
	"math"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// attnPad is llama.cpp's KV padding without flash attention: a token's
// softmax row covers its visible positions rounded up to a multiple of 32,
// the rest masked. Masked entries come out exactly 0, and ref.SoftmaxRow
// sums whole groups of softmaxGroup from index 0, so any masked length
// that is a multiple of softmaxGroup gives the same bits: the softmax
// stops at the first such length, P·V runs over whole SIMD chunks.
const (
	attnPad      = 32
	softmaxGroup = 16
)

func padKV(n int) int { return (n + attnPad - 1) / attnPad * attnPad }

// f16DotBlock is ggml_vec_dot_f16's block on AVX-512: the F16 scores
// give whole blocks to the SIMD dot kernel and sum the rest of the head
// in float64 as ggml sums its tail, so they are its bits on AVX-512
// whatever the head dimension (on AVX2 for heads narrower than 64).
const f16DotBlock = 64

// f16GemmChunk is the element count of one step of the F16 GEMM tiles
// (simd.Gemm): a head dimension that is a multiple of it takes the GEMM
// path of attendHeadsF16, as it takes tinyBLAS in llama.cpp's batches
// (Phi-2's 80 included). Any other length would still be correct there,
// through the GEMM's row-by-row fallback, only slower.
const f16GemmChunk = 16

// kvCache is one attention layer's K and V cache of one sequence in this
// backend's layout (a State of several sequences keeps one per sequence,
// each laid out as a single sequence's, so that a sequence's attention
// has the same bits whatever else the batch holds).
// K holds one row per position ([ctx][kvHeads·headDim]); V is transposed
// per KV head ([kvHeads][headDim][vStride]) so that P·V is headDim
// contiguous dot products over positions, as in llama.cpp. An F16 cache
// holds little-endian binary16 bytes, an F32 cache float32 values.
type kvCache struct {
	kvHeads, headDim int
	ctx              int
	vStride          int // positions per V row: ctx padded, padding kept 0
	f16              bool
	k16, v16         []byte
	k32, v32         []float32
	job              attnJob     // attend's reusable work for the pool
	one              [1]*kvCache // attend's caches: this one

	// Flash attention (flash.go): K and V in kq and vq, of type kt (F16,
	// Q8_0 or Q4_0), rowBytes a position; V row-major, K too or, binary16,
	// in blocks of cells (kOffset). kRow is storeFlash's scratch. f32Acc:
	// a binary16 V accumulates in float32 (StateOptions.FlashF32Acc).
	flash    bool
	f32Acc   bool
	kt       KVType
	rowBytes int
	kq, vq   []byte
	kRow     []byte
}

// K holds vStride rows, not ctx: the F16 GEMM of attendBlockF16 reads
// whole tiles of kRowTile rows past the last visible position (their
// scores are masked), so that every score comes from the same tile code
// whatever the batch.
func newKVCache(kvHeads, headDim, ctx int, t KVType) *kvCache {
	c := &kvCache{kvHeads: kvHeads, headDim: headDim, ctx: ctx, vStride: padKV(ctx), f16: t == KVF16}
	kn, vn := c.vStride*c.width(), c.vStride*c.width()
	if c.f16 {
		c.k16, c.v16 = make([]byte, 2*kn), make([]byte, 2*vn)
	} else {
		c.k32, c.v32 = make([]float32, kn), make([]float32, vn)
	}
	return c
}

func (c *kvCache) width() int { return c.kvHeads * c.headDim }

func (c *kvCache) bytes() int64 {
	return int64(len(c.k16)+len(c.v16)+len(c.kq)+len(c.vq)) + 4*int64(len(c.k32)+len(c.v32))
}

// store writes one token's K and V rows (width values each) at position
// pos, rounding to binary16 to nearest even for an F16 cache as ggml_cpy
// does. Precondition: 0 <= pos < ctx.
// (It allocates its scratch: runAttention calls storeRun.)
func (c *kvCache) store(pos int, k, v []float32) {
	c.storeRun(pos, k, v, 1, make([]byte, vBlockBytes))
}

// storeRun is store for n consecutive tokens: rows t of k and v (width
// values apart) go to position pos+t; scratch holds vBlockBytes (an F16
// cache's transposed V store). Precondition: pos+n <= ctx.
func (c *kvCache) storeRun(pos int, k, v []float32, n int, scratch []byte) {
	if c.flash {
		w := c.width()
		for t := range n {
			c.storeFlash(pos+t, k[t*w:(t+1)*w], v[t*w:(t+1)*w])
		}
		return
	}
	c.storeCols(pos, k, v, n, 0, c.width(), scratch)
}

// storeCols is storeRun of values [i0, i1) of every row, for a cache
// without flash attention: each value is stored on its own (rounded to
// binary16 alone), so column ranges can be stored by different workers
// (storeJob) with the bits of one storeRun.
func (c *kvCache) storeCols(pos int, k, v []float32, n, i0, i1 int, scratch []byte) {
	w := c.width()
	if c.f16 {
		toF16 := simd.QuantizeRow(gguf.TypeF16)
		for t := range n {
			r := (pos + t) * w
			toF16(k[t*w+i0:t*w+i1], c.k16[2*(r+i0):2*(r+i1)])
		}
		c.storeV16(pos, v[:n*w], n, i0, i1, scratch)
		return
	}
	for t := range n {
		copy(c.k32[(pos+t)*w+i0:(pos+t)*w+i1], k[t*w+i0:t*w+i1])
		for i := i0; i < i1; i++ {
			c.v32[i*c.vStride+pos+t] = v[t*w+i]
		}
	}
}

// The transposed F16 V store converts and writes blocks of vBlockToks
// tokens × vBlockDims values through a scratch buffer (vBlockBytes), so that each V row
// receives several consecutive positions at once instead of one write
// per cache line touched (Phi-2's 2,560 V rows made the per-value
// store a tenth of prefill).
const (
	vBlockToks  = 16
	vBlockDims  = 128
	vBlockBytes = 2 * vBlockToks * vBlockDims
)

// storeV16 writes values [lo, hi) of n tokens' V rows (v is [n][width])
// into the transposed F16 cache at positions pos…, rounded as
// simd.QuantizeRow rounds (to nearest even, as quant.FP32ToFP16).
func (c *kvCache) storeV16(pos int, v []float32, n, lo, hi int, scratch []byte) {
	w, vs := c.width(), c.vStride
	toF16 := simd.QuantizeRow(gguf.TypeF16)
	blk := scratch[:vBlockBytes]
	for t0 := 0; t0 < n; t0 += vBlockToks {
		nt := min(vBlockToks, n-t0)
		for i0 := lo; i0 < hi; i0 += vBlockDims {
			ni := min(vBlockDims, hi-i0)
			for t := range nt {
				row := v[(t0+t)*w+i0:]
				toF16(row[:ni], blk[t*2*vBlockDims:t*2*vBlockDims+2*ni])
			}
			for i := range ni {
				dst := c.v16[2*((i0+i)*vs+pos+t0):]
				dst = dst[:2*nt]
				for t := range nt {
					src := blk[t*2*vBlockDims+2*i:]
					dst[2*t], dst[2*t+1] = src[0], src[1]
				}
			}
		}
	}
}

// storeJob is storeRun shared among the workers by column ranges of
// storeUnit values (storeCols), for prompts of at least storeParallelMin
// tokens: the store runs between two parallel kernels, and for Phi-2's
// 2,560-wide K and V one thread storing a 512-token prompt while the
// other waited was 4–5% of prefill.
type storeJob struct {
	c      *kvCache
	pos, n int
	k, v   []float32
	bufs   []attnBuf
}

const (
	storeUnit        = 64
	storeParallelMin = 16
)

func (j *storeJob) run(w, lo, hi int) {
	j.c.storeCols(j.pos, j.k, j.v, j.n, lo*storeUnit, min(hi*storeUnit, j.c.width()), j.bufs[w].vBlk)
}

// store is storeRun on threads workers where that pays (storeJob).
func (j *storeJob) store(threads int) {
	c := j.c
	if c.flash || j.n < storeParallelMin || threads <= 1 {
		c.storeRun(j.pos, j.k, j.v, j.n, j.bufs[0].vBlk)
		return
	}
	parallelFor((c.width()+storeUnit-1)/storeUnit, threads, 1, j)
}

// copyFrom copies positions [0, n) of src, a cache of the same geometry.
func (c *kvCache) copyFrom(src *kvCache, n int) {
	if c.flash {
		copy(c.kq[:flashKBytes(n, c.kt, c.rowBytes)], src.kq)
		copy(c.vq[:n*c.rowBytes], src.vq)
		return
	}
	w, vs := c.width(), c.vStride
	if c.f16 {
		copy(c.k16[:2*n*w], src.k16)
		for i := range w {
			copy(c.v16[2*i*vs:2*(i*vs+n)], src.v16[2*i*vs:])
		}
		return
	}
	copy(c.k32[:n*w], src.k32)
	for i := range w {
		copy(c.v32[i*vs:i*vs+n], src.v32[i*vs:])
	}
}

// attnShape is an Attention node's geometry.
type attnShape struct {
	heads, kvHeads, headDim int
	scale                   float32
	window                  int     // sliding window (0: none): see first
	softCap                 float32 // scores soft-capped (Gemma 2; 0: none): see capScores
}

// capScores soft-caps the raw scores of row (before the softmax's scale),
// as ggml does: ·(1/cap), tanh, ·cap.
func (sh attnShape) capScores(row []float32) {
	if sh.softCap <= 0 {
		return
	}
	for p, x := range row {
		row[p] = ref.SoftCap(x, sh.softCap)
	}
}

// first is the first position a token at pos sees: pos-window+1 with a
// sliding window (llama.cpp's SWA mask), else 0.
func (sh attnShape) first(pos int) int {
	if sh.window <= 0 {
		return 0
	}
	return max(0, pos+1-sh.window)
}

// maskWindow sets the scores of the positions before first to -∞, as
// llama.cpp's mask does before the softmax.
func maskWindow(row []float32, first int) {
	for p := range first {
		row[p] = float32(math.Inf(-1))
	}
}

func (sh attnShape) check(c *kvCache) error {
	if sh.kvHeads <= 0 || sh.heads%sh.kvHeads != 0 {
		return fmt.Errorf("%d query heads cannot share %d KV heads", sh.heads, sh.kvHeads)
	}
	if sh.kvHeads != c.kvHeads || sh.headDim != c.headDim {
		return fmt.Errorf("attention of %d KV heads × %d does not match its cache of %d × %d", sh.kvHeads, sh.headDim, c.kvHeads, c.headDim)
	}
	return nil
}

// attnBuf is one worker's scratch: the binary16 queries (and a widened
// tail), score rows, binary16 probabilities and outputs of up to one
// block's query rows (attnRowsCap).
type attnBuf struct {
	q16    []byte
	qTail  []float32
	scores []float32
	p16    []byte
	out    []float32
	vBlk   []byte // kvCache.storeCols's scratch (storeJob: one per worker)
	flash  flashBuf
}

// attnBlockRows is how many query rows (tokens × the query heads of one
// KV head) the F16 GEMM path takes in one call: a multi-head model
// (Phi-2: one query head per KV head) batches 16 consecutive tokens, so
// that each K and V row read from the cache serves 16 queries instead of
// one, as llama.cpp's batched KQ and KQV products do.
const attnBlockRows = 16

// blockTokens is how many consecutive tokens one work unit of attend
// takes on the F16 GEMM path, for group query heads per KV head.
func blockTokens(group int) int { return max(1, attnBlockRows/group) }

// attnRowsCap bounds blockTokens(g)·g for every g up to group.
func attnRowsCap(group int) int { return max(attnBlockRows, group) }

// newAttnBufs sizes scratch for threads workers, up to group query heads
// per KV head, head dimension up to headDim and ctx positions (flash
// attention: head dimension only), and the first worker's V-store block.
func newAttnBufs(threads, group, headDim, ctx int, flash bool) []attnBuf {
	bufs := make([]attnBuf, max(threads, 1))
	n, rows := padKV(ctx), attnRowsCap(group)
	for i := range bufs {
		bufs[i] = attnBuf{q16: make([]byte, 2*rows*headDim), qTail: make([]float32, headDim), scores: make([]float32, rows*n), p16: make([]byte, 2*rows*n), out: make([]float32, rows*headDim)}
		if flash {
			// Flash attention keeps no score rows.
			bufs[i] = attnBuf{flash: newFlashBuf(group*flashTokens, headDim)}
		}
	}
	if !flash {
		for i := range bufs {
			bufs[i].vBlk = make([]byte, vBlockBytes)
		}
	}
	return bufs
}

// attend computes causal attention for nTok query tokens of this cache's
// sequence at positions pos0… whose K and V are stored already (see
// attnJob.attend). q and out are [nTok][heads·headDim].
func (c *kvCache) attend(out, q []float32, nTok, pos0 int, sh attnShape, bufs []attnBuf) {
	c.one[0] = c
	c.job = attnJob{caches: c.one[:], out: out, q: q, nTok: nTok, pos0: pos0, sh: sh, bufs: bufs}
	c.job.attend()
}

// attnJob is one Attention node's step for the worker pool: the batch's
// queries and each token's sequence (its cache) and position. A State
// and each cache keep one, so handing it over allocates nothing.
type attnJob struct {
	caches         []*kvCache // per sequence
	seqs, pos      []int32    // per token; nil: sequence 0, positions pos0…
	out, q         []float32
	nTok, pos0     int
	block          int // tokens per work unit (blockTokens, or 1)
	split, workers int
	sh             attnShape
	bufs           []attnBuf
}

// at returns token t's cache and position.
func (j *attnJob) at(t int) (*kvCache, int) {
	c := j.caches[0]
	if j.seqs != nil {
		c = j.caches[j.seqs[t]]
	}
	if j.pos == nil {
		return c, j.pos0 + t
	}
	return c, int(j.pos[t])
}

// attend computes the attention of every token of the job, with the
// numerics of ref.Attention (see attendHeads): each token reads only its
// own sequence's cache, and its result does not depend on the other
// tokens of the batch. Work units are (KV head, block of tokens, slice of
// the KV head's query heads), dealt round-robin to len(bufs) workers:
// that balances the causal triangle, and a worker's heads of one KV head
// reuse its K and V rows while they are in cache. A block is one token,
// or blockTokens consecutive ones on the F16 GEMM path (attendBlockF16),
// or flashTokens under flash attention (flashBlock).
// Heads are sliced only when there are fewer (KV head, block) pairs than
// workers, as in decode.
func (j *attnJob) attend() {
	group := j.sh.heads / j.sh.kvHeads
	j.block = 1
	switch c := j.caches[0]; {
	case c.gemmPath():
		j.block = blockTokens(group)
	case c.flash:
		j.block = flashTokens
	}
	pairs := (j.nTok + j.block - 1) / j.block * j.sh.kvHeads
	j.split = min(group, (len(j.bufs)+pairs-1)/pairs)
	units := pairs * j.split
	j.workers = min(len(j.bufs), units)
	if j.workers == 1 {
		j.units(0, 1, &j.bufs[0])
		return
	}
	parallelFor(j.workers, j.workers, 1, j)
}

func (j *attnJob) run(w, _, _ int) { j.units(w, j.workers, &j.bufs[w]) }

// units runs work units first, first+stride, … of attend, each KV head's
// query heads cut into split slices.
func (j *attnJob) units(first, stride int, b *attnBuf) {
	sh, split := j.sh, j.split
	group := sh.heads / sh.kvHeads
	blocks := (j.nTok + j.block - 1) / j.block
	units := blocks * sh.kvHeads * split
	for u := first; u < units; u += stride {
		g, rest := u/(blocks*split), u%(blocks*split)
		blk, part := rest/split, rest%split
		h0 := g*group + part*group/split
		h1 := g*group + (part+1)*group/split
		t0, t1 := blk*j.block, min((blk+1)*j.block, j.nTok)
		c, pos := j.at(t0)
		if j.block > 1 && j.consecutive(c, pos, t0, t1) {
			if c.flash {
				c.flashBlock(j.out, j.q, t0, t1-t0, pos, h0, h1, sh, &b.flash)
			} else {
				c.attendBlockF16(j.out, j.q, t0, t1-t0, pos, h0, h1, sh, b)
			}
			continue
		}
		for t := t0; t < t1; t++ {
			c, pos := j.at(t)
			c.attendHeads(j.out, j.q, t, pos, h0, h1, j.inRun(t), sh, b)
		}
	}
}

// consecutive reports whether tokens [t0, t1) all belong to cache c at
// positions pos, pos+1, …: one prompt's run, which attendBlockF16 takes
// at once. Tokens of several sequences go one by one.
func (j *attnJob) consecutive(c *kvCache, pos, t0, t1 int) bool {
	for t := t0 + 1; t < t1; t++ {
		if ct, pt := j.at(t); ct != c || pt != pos+t-t0 {
			return false
		}
	}
	return true
}

// inRun reports whether token t shares a run of consecutive positions of
// its sequence with a neighbour in the batch: llama.cpp multiplies P·V of
// such a batch with tinyBLAS, of a single token with ggml_vec_dot, and
// over an f32 cache the two orders give different bits. A run is judged
// on its own, as ref.AttentionSeqs judges it, so that a sequence's result
// does not depend on what else the batch holds.
func (j *attnJob) inRun(t int) bool {
	c, p := j.at(t)
	for _, u := range [2]int{t - 1, t + 1} {
		if u < 0 || u >= j.nTok {
			continue
		}
		if cu, pu := j.at(u); cu == c && pu-p == u-t {
			return true
		}
	}
	return false
}

// gemmPath reports whether attention over this cache takes the F16 GEMM
// path (attendBlockF16): an F16 cache, head dimension of whole GEMM
// chunks (f16GemmChunk), no flash attention.
func (c *kvCache) gemmPath() bool {
	return !c.flash && c.f16 && c.headDim%f16GemmChunk == 0
}

// attendHeads computes query heads [h0, h1) (all of one KV head) of batch
// token t at position pos of this cache's sequence; inRun tells whether
// the token is part of a run of several (attnJob.inRun). Like llama.cpp
// with an F16 cache, the query is rounded to binary16 for Q·Kᵀ and the
// probabilities for P·V; scores are scaled and normalised by
// ref.SoftmaxRow. With an F16 cache only the summation order of the dot
// products differs from ref.Attention; an F32 cache gives its bits
// (attendHeadsF32).
func (c *kvCache) attendHeads(out, q []float32, t, pos, h0, h1 int, inRun bool, sh attnShape, b *attnBuf) {
	if c.flash {
		c.flashHeads(out, q, t, pos, h0, h1, sh, &b.flash)
		return
	}
	if c.gemmPath() {
		c.attendBlockF16(out, q, t, 1, pos, h0, h1, sh, b)
		return
	}
	if !c.f16 {
		c.attendHeadsF32(out, q, t, pos, h0, h1, inRun, sh, b)
		return
	}
	hd := c.headDim
	visible := pos + 1
	n := padKV(visible)
	g := h0 / (sh.heads / sh.kvHeads)
	row := b.scores[:n]
	for h := h0; h < h1; h++ {
		off := (t*sh.heads + h) * hd
		qh, oh := q[off:off+hd], out[off:off+hd]
		c.scoresF16(row[:visible], qh, g, b)
		soft := softmax(row, visible, pos, sh)
		c.mulPV(oh, row, soft, g, b)
	}
}

// softmax turns the scores of one query row (its visible positions
// filled, padded to len(row)) into probabilities as ref.Attention does,
// and returns soft, the end of the entries softmaxed (a whole number of
// softmaxGroup; the rest are cleared).
func softmax(row []float32, visible, pos int, sh attnShape) int {
	soft := (visible + softmaxGroup - 1) / softmaxGroup * softmaxGroup
	for p := visible; p < soft; p++ {
		row[p] = float32(math.Inf(-1))
	}
	sh.capScores(row[:visible])
	maskWindow(row, sh.first(pos))
	simd.SoftmaxRow(row[:soft], sh.scale)
	clear(row[soft:])
	return soft
}

// The F32 path's tiles: kTileBytes of K rows, vTileBytes of V rows (each
// as long as the padded score row) at a time.
const (
	kTileBytes = 16 << 10 // in L1
	vTileBytes = 128 << 10
)

// attendHeadsF32 is attendHeads over an F32 cache: Q·Kᵀ in
// ggml_vec_dot_f32's order, P·V in tinyBLAS's for a token in a run and
// ggml_vec_dot_f32's (over the padded cells) for a lone one, as llama.cpp
// multiplies them, so the results are ref.Attention's bits. The query
// heads of one KV head read the same K and V rows, so both products go
// tile by tile over the cache, every head taking a tile while it is in
// cache: each K and V row is read from memory once for all the heads
// instead of once for each. Tiling decides only which call computes
// which dot product, never a dot product's order.
func (c *kvCache) attendHeadsF32(out, q []float32, t, pos, h0, h1 int, inRun bool, sh attnShape, b *attnBuf) {
	hd, w, vs := c.headDim, c.width(), c.vStride
	visible := pos + 1
	n := padKV(visible)
	g := h0 / (sh.heads / sh.kvHeads)
	nh := h1 - h0
	scores := b.scores[:nh*n]
	base := (t*sh.heads + h0) * hd // head h0+i's query and output at base+i·hd
	kTile := max(1, kTileBytes/(4*hd))
	for p0 := 0; p0 < visible; p0 += kTile {
		p1 := min(visible, p0+kTile)
		k := c.k32[p0*w+g*hd:]
		for i := range nh {
			simd.VecDotF32Rows(q[base+i*hd:base+(i+1)*hd], k, w, scores[i*n+p0:i*n+p1])
		}
	}
	soft := 0
	for i := range nh {
		soft = softmax(scores[i*n:(i+1)*n], visible, pos, sh) // the same for every head
	}
	vTile := max(1, vTileBytes/(4*n))
	for d0 := 0; d0 < hd; d0 += vTile {
		d1 := min(hd, d0+vTile)
		v := c.v32[(g*hd+d0)*vs:] // V row d of KV head g at (g·hd+d)·vs
		for i := range nh {
			probs, oh := scores[i*n:(i+1)*n], out[base+i*hd+d0:base+i*hd+d1]
			if inRun {
				simd.TinyDotF32Rows(probs[:soft], v, vs, oh)
			} else {
				simd.VecDotF32Rows(probs, v, vs, oh)
			}
		}
	}
}

// kRowTile is the row count of the F16 GEMM's tiles (simd's gemmRows):
// attendBlockF16 reads K in whole tiles.
const kRowTile = 4

// attendBlockF16 is attendHeads for nt consecutive tokens t0… at
// positions pos… of this cache's sequence, on the F16 GEMM path
// (gemmPath). The query rows (token, head) of the block share their KV
// head's K and V rows, so both products are GEMMs with those rows as the
// "tokens": Q̂·Kᵀ over the last token's visible positions rounded up to
// whole tiles of kRowTile (the K cache has padKV(ctx) rows), then P̂·V
// over padKV of them. Every score comes from a tile, which sums each
// (position, row) pair in one order whatever rows share the call, and the
// extra P·V terms are products with probabilities of exactly 0, so a
// token's result has the same bits alone (decode), in any block, and on
// any split of the work; the scores past a row's own visible positions
// are masked before its softmax.
func (c *kvCache) attendBlockF16(out, q []float32, t0, nt, pos, h0, h1 int, sh attnShape, b *attnBuf) {
	hd, w := c.headDim, c.width()
	last := pos + nt // visible positions of the block's last token
	n := padKV(last)
	kRows := (last + kRowTile - 1) / kRowTile * kRowTile
	g := h0 / (sh.heads / sh.kvHeads)
	nh := h1 - h0
	rows := nt * nh
	toF16, gemm := simd.QuantizeRow(gguf.TypeF16), simd.Gemm(gguf.TypeF16)
	q16 := b.q16[:2*rows*hd]
	for i := range nt {
		off := ((t0+i)*sh.heads + h0) * hd
		toF16(q[off:off+nh*hd], q16[2*i*nh*hd:2*(i+1)*nh*hd])
	}
	scores := b.scores[:rows*n]
	gemm(hd, c.k16[2*g*hd:], 2*w, kRows, q16, 2*hd, rows, scores, n)
	for r := range rows {
		p := pos + r/nh // this row's token's position
		visible := p + 1
		soft := (visible + softmaxGroup - 1) / softmaxGroup * softmaxGroup
		row := scores[r*n : (r+1)*n]
		for i := visible; i < soft; i++ {
			row[i] = float32(math.Inf(-1))
		}
		sh.capScores(row[:visible])
		maskWindow(row, sh.first(p))
		simd.SoftmaxRow(row[:soft], sh.scale)
		clear(row[soft:])
	}
	p16 := b.p16[:2*rows*n]
	toF16(scores, p16)
	v := c.v16[2*g*hd*c.vStride:]
	// Where the rows' outputs lie evenly spaced in out (one token, one
	// head per token, or every head of each token), write them there.
	stride, direct := hd, nt == 1 || nh == sh.heads
	if nh == 1 {
		stride, direct = sh.heads*hd, true
	}
	if direct {
		gemm(n, v, 2*c.vStride, hd, p16, 2*n, rows, out[(t0*sh.heads+h0)*hd:], stride)
		return
	}
	o := b.out[:rows*hd]
	gemm(n, v, 2*c.vStride, hd, p16, 2*n, rows, o, hd)
	for i := range nt {
		off := ((t0+i)*sh.heads + h0) * hd
		copy(out[off:off+nh*hd], o[i*nh*hd:(i+1)*nh*hd])
	}
}

// scoresF16 sets row[p] to q̂·K[p] for KV head g, q̂ the binary16 query.
// Whole 64-value blocks go to the SIMD kernel; the rest of the head
// dimension is summed in float64 as ggml_vec_dot_f16 sums its tail, so the
// scores are its bits (see f16DotBlock; 8 values in stories260K).
func (c *kvCache) scoresF16(row, qh []float32, g int, b *attnBuf) {
	hd, w := c.headDim, c.width()
	simd.QuantizeRow(gguf.TypeF16)(qh, b.q16[:2*hd])
	body := hd / f16DotBlock * f16DotBlock
	simd.VecDotRows(gguf.TypeF16)(body, c.k16[2*g*hd:], 2*w, len(row), b.q16, row)
	if body == hd {
		return
	}
	qt := b.qTail[:hd-body]
	quant.FP16ToFP32Row(b.q16[2*body:], qt)
	for p := range row {
		k := c.k16[2*(p*w+g*hd+body):]
		sum := float64(row[p])
		for i, x := range qt {
			sum += float64(x * quant.FP16ToFP32(uint16(k[2*i])|uint16(k[2*i+1])<<8))
		}
		row[p] = float32(sum)
	}
}

// mulPV sets oh[d] to the dot product of the binary16-rounded
// probabilities with V row d of KV head g (an F16 cache). It runs over the
// padded row (llama.cpp's n_kv cells): the probabilities from soft on are
// 0 and the V entries there are finite, so they add exact zeros. (With an
// F32 cache the length also decides which values ggml_vec_dot_f32 takes
// in its 64-value blocks; tinyBLAS's single accumulator needs only the
// first soft values, whole 16-value chunks: see attendHeadsF32.)
func (c *kvCache) mulPV(oh, probs []float32, soft int, g int, b *attnBuf) {
	hd, vs := c.headDim, c.vStride
	n := len(probs)
	simd.QuantizeRow(gguf.TypeF16)(probs[:soft], b.p16[:2*soft])
	clear(b.p16[2*soft : 2*n])
	simd.VecDotRows(gguf.TypeF16)(n, c.v16[2*g*hd*vs:], 2*vs, hd, b.p16, oh)
}
