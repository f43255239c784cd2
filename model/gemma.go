package model

import (
	"math"

	"github.com/weft-ml/weft/ops"
)

// gemma (Gemma 1): embeddings scaled by √n_embd, head dimension from
// attention.key_length (q may be wider than the embedding), NeoX RoPE,
// q scaled by 1/√head_dim before the scores, GELU-gated FFN, output
// always tied. The stored norm weights already hold HF's 1 + w.
func init() {
	mustRegister(Arch{
		Name: "gemma",
		Keys: commonKeys(keyRMSEps),
		Tensors: func(p Params) []Tensor {
			return append(globalTensors(p, alwaysTied, NoBias, NoBias), PerLayer(p, func(pre string) []Tensor {
				ts := norm(pre+"attn_norm", p.Embd, NoBias)
				ts = append(ts, attnTensors(p, pre, NoBias, NoBias)...)
				ts = append(ts, norm(pre+"ffn_norm", p.Embd, NoBias)...)
				return append(ts, ffnTensors(p, pre, true, NoBias)...)
			})...)
		},
		Lower: func(l *Lowering) error {
			// llama.cpp scales by sqrtf(n_embd): a float32 square root.
			x := l.Embed(float32(math.Sqrt(float64(l.P.Embd))))
			for il := range l.P.Layers {
				l.SetLayer(il)
				h := l.Norm(x, RMSNorm, "attn_norm", "attn_norm")
				x = l.Add(l.SelfAttention(h, Attention{NeoX: true, ScaleQ: true}), x, "sa_out")
				h = l.Norm(x, RMSNorm, "ffn_norm", "ffn_norm")
				x = l.Add(l.FeedForward(h, FFN{Act: ops.GELU, Gated: true}), x, "l_out")
			}
			l.Output(x, RMSNorm)
			return l.Err()
		},
	})
}
