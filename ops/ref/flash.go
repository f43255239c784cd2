package ref

import (
	"math"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// Flash attention as llama.cpp computes it under -fa on the CPU
// (ggml_compute_forward_flash_attn_ext_f16, c392e5094): one query row at a
// time, one pass over the KV cells with an online softmax (running maximum
// M, running sum S, accumulator rescaled when M grows), no score row kept.
// Its numerics differ from Attention's:
//
//   - Q is converted to the K cache's dot-product type: binary16 for an F16
//     cache, Q8_0 blocks (ggml-cpu's vector quantize_row_q8_0) for Q8_0 and
//     Q4_0 caches; scores are ggml's vec_dot of that pair.
//   - Each score is multiplied by scale (by scale/softcap, then
//     softcap·tanhf, with soft-capping); masked cells are skipped.
//   - With an F16 V cache the accumulator is binary16: every rescale and
//     every multiply-add rounds it to binary16. Other V types are widened
//     to float32 and accumulated in float32 (and an F16 V too under
//     AttnOptions.F32Acc, weft's opt-in).
//   - Vector loops (the first headDim&^63 elements) fuse the multiply-add;
//     scalar tails do not (ggml's Makefile build is ISO C11, which does
//     not contract), and neither does S·ms + vs.
//   - The output is the accumulator times the float32 value of 1/S.

// FlashQuery is one query head converted to the K cache's dot-product type.
type FlashQuery struct {
	Half []float32 // F16 cache: the binary16-rounded query
	Q8   []byte    // Q8_0 and Q4_0 caches: the query in Q8_0 blocks
}

// FlashDot returns the raw score (before any scale) of query q against K
// cache row pos, whose head starts at element off and has len(q) values.
type FlashDot func(k KV, pos, off int, q FlashQuery) float32

// FlashScratch is FlashAttention's scratch, for head dimensions up to the
// one it was made for.
type FlashScratch struct {
	half, acc, vrow []float32
	q8              []byte
}

// NewFlashScratch returns scratch for heads of headDim values.
func NewFlashScratch(headDim int) *FlashScratch {
	return &FlashScratch{
		half: make([]float32, headDim), acc: make([]float32, headDim), vrow: make([]float32, headDim),
		q8: make([]byte, (headDim+31)/32*34),
	}
}

// FlashAttention is Attention's computation with llama.cpp's flash
// attention numerics (see above): causal grouped-query attention for nTok
// query tokens at positions pos0… against cache rows [0, pos0+nTok), with
// o's sliding window and soft-capping.
//
// Preconditions: those of Attention, except that k is F16, Q8_0 or Q4_0
// and v F16, F32, Q8_0 or Q4_0 (llama.cpp's CPU kernel has no F32 K);
// a quantized cache needs headDim a multiple of 32.
func FlashAttention(out, q []float32, k, v KV, nTok, pos0, nHead, nKVHead, headDim int, scale float32, o AttnOptions, s *FlashScratch) {
	FlashAttentionWith(out, q, k, v, nTok, pos0, nHead, nKVHead, headDim, scale, o, GGMLFlashDot, s)
}

// FlashAttentionWith is FlashAttention with dot standing in for ggml's
// score dot products (a fast kernel's, whose summation order may differ):
// everything else is computed as FlashAttention does.
func FlashAttentionWith(out, q []float32, k, v KV, nTok, pos0, nHead, nKVHead, headDim int, scale float32, o AttnOptions, dot FlashDot, s *FlashScratch) {
	group := nHead / nKVHead
	for t := range nTok {
		pos := pos0 + t
		first := 0
		if o.Window > 0 {
			first = max(0, pos+1-o.Window)
		}
		for h := range nHead {
			slot := (t*nHead + h) * headDim
			qc := ConvertFlashQuery(k, q[slot:slot+headDim], s)
			flashHead(out[slot:slot+headDim], qc, k, v, h/group*headDim, first, pos+1, scale, o, dot, s)
		}
	}
}

// ConvertFlashQuery converts one query head for Q·Kᵀ against k (ggml's
// q_to_vec_dot), into s's buffers.
func ConvertFlashQuery(k KV, qh []float32, s *FlashScratch) FlashQuery {
	if k.isF16() {
		half := s.half[:len(qh)]
		for i, x := range qh {
			half[i] = roundHalf(x)
		}
		return FlashQuery{Half: half}
	}
	q8 := s.q8[:len(qh)/32*34]
	QuantizeRowQ8_0(qh, q8)
	return FlashQuery{Q8: q8}
}

// flashHead computes one query head's output against cache rows [first,
// visible), its KV head at element kvOff, as the loop of
// ggml_compute_forward_flash_attn_ext_f16 does.
func flashHead(out []float32, q FlashQuery, k, v KV, kvOff, first, visible int, scale float32, o AttnOptions, dot FlashDot, s *FlashScratch) {
	hd, softCap := len(out), o.SoftCap
	acc := s.acc[:hd]
	clear(acc)
	if softCap > 0 {
		scale /= softCap
	}
	f16 := v.isF16() && !o.F32Acc
	sum, maxv := float32(0), float32(math.Inf(-1))
	for p := first; p < visible; p++ {
		x := dot(k, p, kvOff, q) * scale
		if softCap > 0 {
			x = softCap * float32(math.Tanh(float64(x)))
		}
		ms, vs := float32(1), float32(1)
		if x > maxv {
			ms = expf(maxv - x)
			maxv = x
			FlashScale(acc, ms, f16)
		} else {
			vs = expf(x - maxv)
		}
		FlashMad(acc, v.widenRow(p, kvOff, s.vrow[:hd]), vs, f16)
		sum = float32(sum*ms) + vs // unfused: ggml builds as ISO C, without contraction
	}
	inv := 1 / sum
	for i, a := range acc {
		out[i] = a * inv
	}
}

// FlashScale is ggml_vec_scale_f16 (f16: acc holds binary16 values and
// each product is rounded to binary16) or ggml_vec_scale_f32.
func FlashScale(acc []float32, ms float32, f16 bool) {
	for i, a := range acc {
		acc[i] = a * ms
		if f16 {
			acc[i] = roundHalf(acc[i])
		}
	}
}

// FlashMad is acc += x·vs as ggml_vec_mad_f16 (f16: rounded to binary16
// each time) or ggml_vec_mad_f32 computes it: fused over the vector
// loop's whole blocks of 64, unfused in the tail.
func FlashMad(acc, x []float32, vs float32, f16 bool) {
	np := len(acc) &^ (4*lanes - 1)
	for i := range acc[:np] {
		acc[i] = fma32(x[i], vs, acc[i])
	}
	for i := np; i < len(acc); i++ {
		acc[i] += x[i] * vs
	}
	if f16 {
		for i, a := range acc {
			acc[i] = roundHalf(a)
		}
	}
}

// widenRow returns the head at element off of row p as float32 (ggml's
// to_float for the V type), in dst.
func (c KV) widenRow(p, off int, dst []float32) []float32 {
	switch {
	case c.F16 != nil:
		for i, h := range c.F16[p*c.RowLen+off : p*c.RowLen+off+len(dst)] {
			dst[i] = halfToFloat(h)
		}
	case c.Quant != nil:
		rb, bb := c.rowBytes(), c.blockBytes()
		row := c.Quant[p*rb+off/32*bb : p*rb+(off+len(dst))/32*bb]
		_ = quant.Dequantize(c.QType, row, dst)
	default:
		copy(dst, c.F32[p*c.RowLen+off:])
	}
	return dst
}

// blockBytes is the size of one 32-value block of QType.
func (c KV) blockBytes() int {
	n, _ := c.QType.RowBytes(32)
	return int(n)
}

// GGMLFlashDot is ggml's kq_vec_dot for the cache type: ggml_vec_dot_f16
// for F16 (dotHalf's vec path), the AVX2 ggml_vec_dot_q8_0_q8_0 and
// ggml_vec_dot_q4_0_q8_0 for the quantized types (VecDotQ0).
func GGMLFlashDot(k KV, pos, off int, q FlashQuery) float32 {
	if k.isF16() {
		return dotHalf(q.Half, k.F16[pos*k.RowLen+off:], false)
	}
	rb, bb := k.rowBytes(), k.blockBytes()
	n := len(q.Q8) / 34 * 32
	return VecDotQ0(k.QType, n, k.Quant[pos*rb+off/32*bb:], q.Q8)
}

// VecDotQ0 is the AVX2 ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q4_0_q8_0 of
// n values of a Q8_0 or Q4_0 row x and a Q8_0 row y: per block, eight
// int32 lanes each sum four consecutive products exactly; each lane
// accumulates d·lane with a fused multiply-add (d = d_x·d_y in float32);
// the eight lanes are reduced as hsum_float_8 does.
func VecDotQ0(t gguf.TensorType, n int, x, y []byte) float32 {
	var acc [8]float32
	bb := 34
	if t == gguf.TypeQ4_0 {
		bb = 18
	}
	var vals [32]int32
	for b := 0; b < n/32; b++ {
		xb, yb := x[b*bb:(b+1)*bb], y[b*34:(b+1)*34]
		if t == gguf.TypeQ4_0 {
			for j, c := range xb[2:] {
				vals[j], vals[j+16] = int32(c&0xf)-8, int32(c>>4)-8
			}
		} else {
			for j, c := range xb[2:] {
				vals[j] = int32(int8(c))
			}
		}
		d := halfToFloat(uint16(xb[0])|uint16(xb[1])<<8) * halfToFloat(uint16(yb[0])|uint16(yb[1])<<8)
		for j := range acc {
			var isum int32
			for i := 4 * j; i < 4*j+4; i++ {
				isum += vals[i] * int32(int8(yb[2+i]))
			}
			acc[j] = fma32(d, float32(isum), acc[j])
		}
	}
	r0, r1, r2, r3 := acc[4]+acc[0], acc[5]+acc[1], acc[6]+acc[2], acc[7]+acc[3]
	return (r0 + r2) + (r1 + r3)
}

// QuantizeRowQ8_0 quantizes x (a whole number of 32-blocks) to Q8_0 as
// ggml-cpu's quantize_row_q8_0 does on AVX2/AVX-512 machines: d =
// amax/127 stored as binary16, the values multiplied by 127/amax (not by
// 1/d) and rounded to nearest even. That differs in the last bit from the
// reference quantizer (package quant), which llama.cpp's CPU backend uses
// for no type.
func QuantizeRowQ8_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/32; b++ {
		blk, y := x[b*32:(b+1)*32], dst[b*34:(b+1)*34]
		var amax float32
		for _, v := range blk {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax = a
			}
		}
		h := floatToHalf(amax / 127)
		y[0], y[1] = byte(h), byte(h>>8)
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range blk {
			y[2+j] = byte(int8(math.RoundToEven(float64(v * id))))
		}
	}
}
