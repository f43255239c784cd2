//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
)

// kvTypes are the flash-attention cache types: shader suffix and the
// ref.KV encoding.
var kvTypes = []struct {
	name string
	t    gguf.TensorType
}{{"f16", gguf.TypeF16}, {"q8_0", gguf.TypeQ8_0}, {"q4_0", gguf.TypeQ4_0}}

// flashKV returns an empty ref.KV of n rows of w values of type t.
func flashKV(t gguf.TensorType, n, w int) ref.KV {
	if t == gguf.TypeF16 {
		return ref.KV{F16: make([]uint16, n*w), RowLen: w}
	}
	rb, _ := t.RowBytes(uint64(w))
	return ref.KV{Quant: make([]byte, n*int(rb)), QType: t, RowLen: w}
}

// deviceRows is kv's first n rows as the Vulkan cache holds them: binary16
// values, or quantized rows each padded to whole words.
func deviceRows(kv ref.KV, n int) []byte {
	var b []byte
	if kv.F16 != nil {
		for _, h := range kv.F16[:n*kv.RowLen] {
			b = binary.LittleEndian.AppendUint16(b, h)
		}
		return pad4(b)
	}
	rb, _ := kv.QType.RowBytes(uint64(kv.RowLen))
	for p := range n {
		b = pad4(append(b, kv.Quant[p*int(rb):(p+1)*int(rb)]...))
	}
	return b
}

// TestKVStoreQuant stores batches into Q8_0 and Q4_0 caches (kv_store,
// and rope_kv with the keys' rotation) at two sequences' cells: the rows
// must be ref.StoreQuantRow's bits (ggml_cpy's quantizers), in rows padded
// to whole words. Widths of one, two and three blocks cover a row that
// ends on a lone block and rows that do not end on a word.
func TestKVStoreQuant(t *testing.T) {
	e := newEnv(t)
	for _, kt := range kvTypes[1:] {
		for _, c := range []struct{ kvHeads, hd, ntok, dims int }{{1, 32, 3, 32}, {2, 32, 2, 16}, {1, 96, 4, 96}, {3, 64, 5, 64}, {2, 128, 1, 128}} {
			const ctx, koff, voff, posoff = 24, 3, 5, 1
			w := c.kvHeads * c.hd
			pos := []int32{0, 7, 23, 5, 11}[:c.ntok]
			cells := []uint32{0, ctx, 0, ctx, ctx}[:c.ntok]
			k, v := e.random(c.ntok*w), e.random(c.ntok*w)
			for i := range k { // some blocks with a wider range, and some zeros
				k[i] *= float32(1 + i%7)
				if i%97 == 5 {
					v[i] = 0
				}
			}
			// Token 0 (position 0: RoPE leaves it) starts with blocks
			// that only ggml-cpu's Q8_0 quantizer gets right.
			q8Traps(e, k[:32])
			q8Ties(v[:32])
			if w >= 64 {
				q8Ties(k[32:64])
				q8Traps(e, v[32:64])
			}
			words := make([]uint32, 2*c.ntok)
			for i := range c.ntok {
				words[i], words[c.ntok+i] = uint32(pos[i]), cells[i]
			}
			sb := e.words(words, posoff)
			rp := ref.RoPE{Dims: c.dims, Base: 10000, FreqScale: 1, Unfused: true}
			for _, rope := range []bool{false, true} {
				kr, vr := flashKV(kt.t, 2*ctx, w), flashKV(kt.t, 2*ctx, w)
				wantK := append([]float32(nil), k...)
				for i := range c.ntok {
					if rope {
						rp.Apply(wantK[i*w:(i+1)*w], c.kvHeads, c.hd, pos[i])
					}
					kr.Store(int(cells[i])+int(pos[i]), wantK[i*w:])
					vr.Store(int(cells[i])+int(pos[i]), v[i*w:])
				}
				kWant, vWant := deviceRows(kr, 2*ctx), deviceRows(vr, 2*ctx)
				kc, vc := e.buf(len(kWant), make([]byte, len(kWant))), e.buf(len(vWant), make([]byte, len(vWant)))
				name := "kv_store_" + kt.name
				if rope {
					name = "rope_kv_" + kt.name
					arena := append(append(append([]float32{}, make([]float32, koff)...), k...), v...)
					xb := e.place(0, arena)
					tb := e.place(0, vulkan.RoPETable(rp, ctx))
					e.run(name, [3]uint32{2, 1, 1}, pushWords(0, c.kvHeads, c.hd, c.dims/2, 0, c.ntok,
						0, 0, koff, koff+len(k), posoff, posoff+c.ntok, 0), xb, tb, sb, e.out(1), kc, vc)
				} else {
					kb, vb := e.place(koff, k), e.place(voff, v)
					e.run(name, [3]uint32{2, 1, 1}, pushWords(w, c.ntok, koff, voff, posoff, posoff+c.ntok), kb, vb, sb, kc, vc)
				}
				for _, pair := range []struct {
					what string
					want []byte
					buf  *vulkan.Buffer
				}{{"K", kWant, kc}, {"V", vWant, vc}} {
					got := make([]byte, len(pair.want))
					require.NoError(t, e.d.Download(got, pair.buf, 0))
					require.Equal(t, pair.want, got, "%s %+v: %s cache", name, c, pair.what)
				}
			}
		}
	}
}

// q8Traps fills a block of 32 with values on which ggml-cpu's vector
// Q8_0 quantizer (×127/amax) and the reference one (×1/d, d = amax/127)
// disagree: the block's amax is one where 127/amax and 1/(amax/127)
// differ, and the other values' products with them round apart.
func q8Traps(e *env, b []float32) {
	for {
		amax := float32(64 + 63*e.rng.Float64())
		id1, id2 := 127/amax, 1/(amax/127)
		if id1 == id2 {
			continue
		}
		b[0] = amax
		for j := 1; j < 32; {
			x := (float32(e.rng.IntN(120)) + 0.5) / id1
			for u := -4; u <= 4 && j < 32; u++ {
				y := math.Float32frombits(uint32(int32(math.Float32bits(x)) + int32(u)))
				if y < amax && math.RoundToEven(float64(y*id1)) != math.RoundToEven(float64(y*id2)) {
					b[j] = y
					j++
				}
			}
		}
		return
	}
}

// q8Ties fills a block with halves at amax 127 (127/amax = 1): ties,
// which ggml-cpu's vector quantizer rounds to even.
func q8Ties(b []float32) {
	for j := range b[:32] {
		b[j] = float32(j%16) - 7.5
	}
	b[5] = 127
}

// TestFlashAttention runs flash_KV against ref.FlashAttention (llama.cpp's
// -fa numerics) on caches filled by ref.KV.Store: prefill and decode,
// grouped-query heads, head dims 64, 80 (F16 only: a quantized cache
// needs whole blocks), 96 and 128, visible lengths that are not whole
// 64-cell tiles, a sliding window, soft-capping, two sequences' cells.
// The shader keeps ggml's summation orders and roundings, but exp and
// tanh are the device's (a few ulp): a changed exp moves a probability
// by an ulp, and with an F16 V that can flip the binary16 rounding of
// the accumulator, half a binary16 ulp of |v| (≈ 3e-4 of a value near
// 1) that the following cells carry on. Tolerance: 2e-4 + 2e-3·|want|
// for F16 V, 2e-6 + 2e-5·|want| for quantized V (float32 accumulator).
func TestFlashAttention(t *testing.T) {
	e := newEnv(t)
	for _, kt := range kvTypes {
		for _, c := range []struct {
			heads, kvHeads, hd, pos0, ntok, window int
			softCap                                float32
		}{
			{4, 4, 64, 0, 5, 0, 0},
			{8, 2, 128, 70, 3, 0, 0},  // GQA groups of 4, 71–73 cells: a partial second tile
			{6, 3, 96, 130, 1, 0, 0},  // decode, 131 cells
			{3, 1, 80, 37, 30, 0, 0},  // prefill across the tile boundary (F16 only)
			{4, 2, 64, 100, 9, 37, 0}, // a sliding window
			{2, 1, 128, 200, 2, 0, 1.5},
			{2, 2, 256, 3, 2, 0, 0},
			{8, 8, 8, 0, 6, 0, 0}, // stories260K's heads (F16 only)
		} {
			if kt.t != gguf.TypeF16 && c.hd%32 != 0 {
				continue
			}
			const ctx = 256
			n := c.pos0 + c.ntok
			w := c.kvHeads * c.hd
			k, v := e.random(n*w), e.random(n*w)
			q := e.random(c.ntok * c.heads * c.hd)
			for i := range q {
				q[i] *= 3
			}
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			// The sequence's cells start at row ctx (the second sequence).
			kr, vr := flashKV(kt.t, ctx+n, w), flashKV(kt.t, ctx+n, w)
			kq, vq := flashKV(kt.t, n, w), flashKV(kt.t, n, w) // the same rows from 0, for ref
			for p := range n {
				kr.Store(ctx+p, k[p*w:])
				vr.Store(ctx+p, v[p*w:])
				kq.Store(p, k[p*w:])
				vq.Store(p, v[p*w:])
			}
			want := make([]float32, len(q))
			o := ref.AttnOptions{Window: c.window, SoftCap: c.softCap}
			ref.FlashAttention(want, q, kq, vq, c.ntok, c.pos0, c.heads, c.kvHeads, c.hd, scale, o, ref.NewFlashScratch(c.hd))

			kb, vb := deviceRows(kr, ctx+n), deviceRows(vr, ctx+n)
			kc, vc := e.buf(len(kb)+8, kb), e.buf(len(vb)+8, vb)
			const qoff, ooff, posoff = 5, 6, 1
			words := make([]uint32, 2*c.ntok)
			for i := range c.ntok {
				words[i], words[c.ntok+i] = uint32(c.pos0+i), ctx
			}
			sb := e.words(words, posoff)
			celloff := posoff + c.ntok
			fscale := scale
			if c.softCap > 0 {
				fscale = scale / c.softCap
			}
			push := func(aoff int) []byte {
				return pushWords(c.heads, c.kvHeads, c.hd, c.ntok, qoff, ooff, posoff, fscale, aoff, celloff, c.window, c.softCap, capInv(c.softCap))
			}
			qb, ob := e.place(qoff, q), e.out(ooff+len(q)+2)
			name := "flash_" + kt.name
			e.run(name, [3]uint32{uint32(c.heads), uint32(c.ntok), 1}, push(0), qb, sb, kc, vc, ob)
			abs, rel := 2e-6, 2e-5
			if kt.t == gguf.TypeF16 {
				abs, rel = 2e-4, 2e-3
			}
			got := e.readAt(ob, ooff, len(q))
			requireClose(t, fmt.Sprintf("%s %+v", name, c), got, want, abs, rel)
			exact := 0
			for i := range got {
				if got[i] == want[i] {
					exact++
				}
			}
			t.Logf("%s %+v: %d of %d values bit-identical to ref", name, c, exact, len(got))

			// Fused with the output projection's activations: the same
			// values, and the bits quantize_q8_0/q8_1 gives them.
			if c.hd%32 != 0 {
				continue
			}
			cols := c.heads * c.hd
			for _, act := range []struct {
				name string
				bw   int
			}{{"q8_0", 9}, {"q8_1", 10}} {
				const aoff = 2
				words := c.ntok * cols / 32 * act.bw
				qa, qf, of := e.out(aoff+words), e.out(aoff+words), e.out(ooff+len(q)+2)
				e.run("quantize_"+act.name, [3]uint32{3, 1, 1}, pushWords(cols, c.ntok, ooff, aoff), ob, qa)
				e.run(name+"_"+act.name, [3]uint32{uint32(c.heads), uint32(c.ntok), 1}, push(aoff), qb, sb, kc, vc, of, qf)
				require.Equal(t, f32Bits(got), f32Bits(e.readAt(of, ooff, len(q))), "%s_%s %+v: values", name, act.name, c)
				require.Equal(t, f32Bits(e.readAt(qa, aoff, words)), f32Bits(e.readAt(qf, aoff, words)), "%s_%s %+v: activations", name, act.name, c)
			}
		}
	}
}
