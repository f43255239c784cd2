package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weft-ml/weft/backends"
)

// attnBenchConfigs are the paths the attention benchmarks compare: the
// default attention (F16 cache), the F32 cache's (llama.cpp's orders),
// and flash attention on F16 (binary16 and float32 accumulators), Q8_0
// and Q4_0 caches.
var attnBenchConfigs = []struct {
	kt            KVType
	flash, f32Acc bool
}{{KVF16, false, false}, {KVF32, false, false}, {KVF16, true, false}, {KVF16, true, true}, {backends.KVQ8_0, true, false}, {backends.KVQ4_0, true, false}}

// benchAttention measures nTok tokens' attention after depth cached
// positions (TinyLlama's shape: 32 query heads, 4 KV heads of 64) on one
// worker, for every path of attnBenchConfigs side by side.
func benchAttention(b *testing.B, nTok, depth int) {
	const heads, kvHeads, hd = 32, 4, 64
	ctx := depth + nTok
	rng := rand.New(rand.NewPCG(1, 2))
	k, v := randVec(rng, ctx*kvHeads*hd, 1.5), randVec(rng, ctx*kvHeads*hd, 1)
	q := randVec(rng, nTok*heads*hd, 1)
	sh := attnShape{heads: heads, kvHeads: kvHeads, headDim: hd, scale: 0.125}
	w := kvHeads * hd
	for _, cfg := range attnBenchConfigs {
		name := fmt.Sprintf("%s/flash=%v", cfg.kt, cfg.flash)
		if cfg.f32Acc {
			name = fmt.Sprintf("%s/flash=f32acc", cfg.kt)
		}
		b.Run(name, func(b *testing.B) {
			c := newKVCache(kvHeads, hd, ctx, cfg.kt)
			if cfg.flash {
				c = newFlashKVCache(kvHeads, hd, ctx, cfg.kt)
				c.f32Acc = cfg.f32Acc
			}
			for p := range ctx {
				c.store(p, k[p*w:(p+1)*w], v[p*w:(p+1)*w])
			}
			out, bufs := make([]float32, nTok*heads*hd), newAttnBufs(1, heads/kvHeads, hd, ctx, cfg.flash)
			b.ResetTimer()
			for range b.N {
				c.attend(out, q, nTok, depth, sh, bufs)
			}
		})
	}
}

// BenchmarkDecodeAttention measures one decode token's attention at depth
// 4096.
func BenchmarkDecodeAttention(b *testing.B) { benchAttention(b, 1, 4095) }

// BenchmarkPrefillAttention measures a 512-token batch's attention at
// depth 0 and 4096.
func BenchmarkPrefillAttention(b *testing.B) {
	for _, depth := range []int{0, 4096} {
		b.Run(fmt.Sprintf("depth%d", depth), func(b *testing.B) { benchAttention(b, 512, depth) })
	}
}

// BenchmarkDecodeAttentionDeep measures a decode token's attention over
// 22 layers' caches at depth 16383 (TinyLlama's shape: 352 MiB of
// binary16 K and V, more than this machine's caches hold, so the cells
// come from memory as in a real decode step), on one worker and on two
// (a decode step's split: KV heads dealt round-robin); ns/op is a whole
// token's (22 layers). Flash attention only (F16 cache, both
// accumulators).
func BenchmarkDecodeAttentionDeep(b *testing.B) {
	const heads, kvHeads, hd, layers, depth = 32, 4, 64, 22, 16383
	ctx, w := depth+1, kvHeads*hd
	rng := rand.New(rand.NewPCG(1, 2))
	k, v := randVec(rng, 4096*w, 1.5), randVec(rng, 4096*w, 1)
	q := randVec(rng, heads*hd, 1)
	sh := attnShape{heads: heads, kvHeads: kvHeads, headDim: hd, scale: 0.125}
	caches := make([]*kvCache, layers)
	for l := range caches {
		caches[l] = newFlashKVCache(kvHeads, hd, ctx, KVF16)
		for p := range ctx {
			r := (p*7 + l) % 4096
			caches[l].store(p, k[r*w:(r+1)*w], v[r*w:(r+1)*w])
		}
	}
	out := make([]float32, heads*hd)
	for _, workers := range []int{1, 2} {
		bufs := newAttnBufs(workers, heads/kvHeads, hd, ctx, true)
		for _, f32Acc := range []bool{false, true} {
			b.Run(fmt.Sprintf("workers=%d/f32acc=%v", workers, f32Acc), func(b *testing.B) {
				for _, c := range caches {
					c.f32Acc = f32Acc
				}
				b.ResetTimer()
				for range b.N {
					for _, c := range caches {
						c.attend(out, q, 1, depth, sh, bufs)
					}
				}
			})
		}
	}
}
