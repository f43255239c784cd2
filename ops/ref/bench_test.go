package ref

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weft-ml/weft/gguf"
)

// reportGFLOPS records the rate of flops floating-point operations per
// benchmark iteration.
func reportGFLOPS(b *testing.B, flops float64) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkMatMulF32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 256, 1024
	w := make([]byte, 4*rows*cols)
	for i := range w {
		w[i] = byte(rng.Uint32() & 0x3f) // small finite floats
	}
	for _, nTok := range []int{1, 8} {
		b.Run(fmt.Sprintf("tok=%d", nTok), func(b *testing.B) {
			x := randVec(rng, nTok*cols, 1)
			dst := make([]float32, nTok*rows)
			scratch := make([]byte, ActScratchBytes(gguf.TypeF32, cols, nTok))
			for b.Loop() {
				if err := MatMul(dst, w, gguf.TypeF32, rows, cols, x, nTok, scratch); err != nil {
					b.Fatal(err)
				}
			}
			reportGFLOPS(b, 2*rows*cols*float64(nTok))
		})
	}
}

func BenchmarkAttention(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	const nHead, nKVHead, headDim = 8, 2, 64
	for _, s := range []struct {
		name       string
		nTok, pos0 int
		f16        bool
	}{{"decode/f16", 1, 511, true}, {"decode/f32", 1, 511, false}, {"prefill/f16", 64, 0, true}} {
		b.Run(s.name, func(b *testing.B) {
			tc := attnCase{s.nTok, s.pos0, nHead, nKVHead, headDim, s.f16}
			rows := make([][]float32, s.pos0+s.nTok)
			for p := range rows {
				rows[p] = randVec(rng, nKVHead*headDim, 1)
			}
			k, v := newCache(tc, rows, len(rows)), newCache(tc, rows, len(rows))
			q := randVec(rng, s.nTok*nHead*headDim, 1)
			out := make([]float32, len(q))
			scratch := make([]float32, AttentionScratch(s.nTok, s.pos0))
			for b.Loop() {
				Attention(out, q, k, v, s.nTok, s.pos0, nHead, nKVHead, headDim, 0.125, scratch)
			}
			// Q·Kᵀ and P·V over the visible positions, 2 flops per multiply-add
			visible := float64(s.nTok*s.pos0) + float64(s.nTok*(s.nTok+1))/2
			reportGFLOPS(b, 4*nHead*headDim*visible)
		})
	}
}
