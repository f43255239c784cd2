package model

import (
	"fmt"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops"
)

// llama: RMSNorm, normal RoPE, SiLU-gated FFN, scores scaled by
// 1/√head_dim; output tied when output.weight is absent (Llama 3.2). The
// projection biases llama.cpp allows are optional here too.
func init() {
	mustRegister(Arch{
		Name: "llama",
		Keys: commonKeys(keyRMSEps),
		Refuse: func(f *gguf.File, _ Params) error {
			// Llama 3.1 and later scale RoPE's frequencies per pair by this
			// tensor (llama.cpp divides each angle by its factor); weft's
			// RoPE has no factors yet, and ignoring them gives wrong logits.
			if _, ok := f.Tensor("rope_freqs.weight"); ok {
				return fmt.Errorf("tensor %q (Llama 3.1-style RoPE frequency factors) is not supported yet", "rope_freqs.weight")
			}
			return nil
		},
		Tensors: func(p Params) []Tensor {
			return append(globalTensors(p, tiedOrUntied, NoBias, NoBias), PerLayer(p, func(pre string) []Tensor {
				ts := norm(pre+"attn_norm", p.Embd, NoBias)
				ts = append(ts, attnTensors(p, pre, OptionalBias, OptionalBias)...)
				ts = append(ts, norm(pre+"ffn_norm", p.Embd, NoBias)...)
				return append(ts, ffnTensors(p, pre, true, OptionalBias)...)
			})...)
		},
		Lower: func(l *Lowering) error {
			x := l.Embed(0)
			for il := range l.P.Layers {
				l.SetLayer(il)
				h := l.Norm(x, RMSNorm, "attn_norm", "attn_norm")
				x = l.Add(l.SelfAttention(h, Attention{}), x, "ffn_inp")
				h = l.Norm(x, RMSNorm, "ffn_norm", "ffn_norm")
				x = l.Add(l.FeedForward(h, FFN{Act: ops.SiLU, Gated: true}), x, "l_out")
			}
			l.Output(x, RMSNorm)
			return l.Err()
		},
	})
}
