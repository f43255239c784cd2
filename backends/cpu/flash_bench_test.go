package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weft-ml/weft/backends"
)

// BenchmarkDecodeAttention measures one decode token's attention at depth
// 4096 (TinyLlama's shape: 32 query heads, 4 KV heads of 64) on one
// worker: the current attention (F16 cache) against flash attention on
// F16, Q8_0 and Q4_0 caches.
func BenchmarkDecodeAttention(b *testing.B) {
	const heads, kvHeads, hd, depth = 32, 4, 64, 4096
	rng := rand.New(rand.NewPCG(1, 2))
	k, v := randVec(rng, depth*kvHeads*hd, 1.5), randVec(rng, depth*kvHeads*hd, 1)
	q := randVec(rng, heads*hd, 1)
	sh := attnShape{heads: heads, kvHeads: kvHeads, headDim: hd, scale: 0.125}
	w := kvHeads * hd
	for _, cfg := range []struct {
		kt    KVType
		flash bool
	}{{KVF16, false}, {KVF16, true}, {backends.KVQ8_0, true}, {backends.KVQ4_0, true}} {
		b.Run(fmt.Sprintf("%s/flash=%v", cfg.kt, cfg.flash), func(b *testing.B) {
			c := newKVCache(kvHeads, hd, depth+1, cfg.kt)
			if cfg.flash {
				c = newFlashKVCache(kvHeads, hd, depth+1, cfg.kt)
			}
			for p := range depth {
				c.store(p, k[p*w:(p+1)*w], v[p*w:(p+1)*w])
			}
			out, bufs := make([]float32, heads*hd), newAttnBufs(1, heads/kvHeads, hd, depth+1, cfg.flash)
			b.ResetTimer()
			for range b.N {
				c.attend(out, q, 1, depth-1, sh, bufs)
			}
		})
	}
}
