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

// flashBuf is one worker's flash scratch: the converted query (binary16
// or Q8_0), the accumulator and a widened V row.
type flashBuf struct {
	q        []byte
	acc, row []float32
}

func newFlashBuf(headDim int) flashBuf {
	return flashBuf{q: make([]byte, max(2*headDim, (headDim+31)/32*34)), acc: make([]float32, headDim), row: make([]float32, headDim)}
}

// convertQuery converts query head qh to the K cache's dot type into
// b.q (ggml's q_to_vec_dot) and returns it.
func (c *kvCache) convertQuery(qh []float32, b *flashBuf) []byte {
	if c.kt == KVF16 {
		q := b.q[:2*len(qh)]
		simd.QuantizeRow(gguf.TypeF16)(qh, q)
		return q
	}
	q := b.q[:len(qh)/32*34]
	ref.QuantizeRowQ8_0(qh, q)
	return q
}

// flashScore is the raw score of converted query q against K row p of KV
// head g: the vector kernel over whole chunks and, for a binary16 cache,
// the rest summed in float64 as ggml_vec_dot_f16 sums its tail (so heads
// narrower than 32 get ggml's exact scores). Every position goes through
// this one function, so a score never depends on the batch, the tile or
// the thread that computed it.
func (c *kvCache) flashScore(p, g int, q []byte) float32 {
	return c.score(simd.VecDot(kvElemType(c.kt)), p, c.headBytes(g), q)
}

// score is flashScore with the dot kernel and the head's byte offset in
// a row looked up once.
func (c *kvCache) score(dot simd.DotFunc, p, hb int, q []byte) float32 {
	hd := c.headDim
	row := c.kq[p*c.rowBytes+hb:]
	if c.kt != KVF16 {
		return dot(hd, row, q)
	}
	body := hd / f16Chunk * f16Chunk
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
			sum = sum*ms + vs
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
