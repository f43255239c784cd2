package model

import (
	"fmt"

	"github.com/weft-ml/weft/ops"
)

// qwen2 (Qwen2, Qwen2.5): llama's block with biases on q, k and v (not on
// the output projection), NeoX RoPE over the whole head, output tied
// when output.weight is absent (the small Qwen2.5 models).
func init() {
	mustRegister(Arch{
		Name: "qwen2",
		Keys: commonKeys(keyRMSEps),
		Check: func(p *Params) error {
			// llama.cpp's build_qwen2 asserts a whole-head rotation.
			if p.RopeDims != p.HeadDim {
				return fmt.Errorf("rope.dimension_count %d differs from the head dimension %d", p.RopeDims, p.HeadDim)
			}
			return nil
		},
		Tensors: func(p Params) []Tensor {
			return append(globalTensors(p, tiedOrUntied, NoBias, NoBias), PerLayer(p, func(pre string) []Tensor {
				ts := norm(pre+"attn_norm", p.Embd, NoBias)
				ts = append(ts, attnTensors(p, pre, WithBias, NoBias)...)
				ts = append(ts, norm(pre+"ffn_norm", p.Embd, NoBias)...)
				return append(ts, ffnTensors(p, pre, true, NoBias)...)
			})...)
		},
		Lower: func(l *Lowering) error {
			x := l.Embed(0)
			for il := range l.P.Layers {
				l.SetLayer(il)
				h := l.Norm(x, RMSNorm, "attn_norm", "attn_norm")
				x = l.Add(l.SelfAttention(h, Attention{NeoX: true}), x, "ffn_inp")
				h = l.Norm(x, RMSNorm, "ffn_norm", "ffn_norm")
				x = l.Add(l.FeedForward(h, FFN{Act: ops.SiLU, Gated: true}), x, "l_out")
			}
			l.Output(x, RMSNorm)
			return l.Err()
		},
	})
}
