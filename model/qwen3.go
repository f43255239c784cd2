package model

import (
	"fmt"

	"github.com/weft-ml/weft/ops"
)

// qwen3 (Qwen3 dense models): qwen2's block without the q, k and v biases
// and with every head of q and k RMS-normalised before RoPE by the
// head-wide attn_q_norm and attn_k_norm weights. The head dimension is
// explicit (attention.key_length: 128 on the small models, wider than
// n_embd/n_head), output tied when output.weight is absent.
func init() {
	mustRegister(Arch{
		Name: "qwen3",
		Keys: commonKeys(keyRMSEps),
		Check: func(p *Params) error {
			// llama.cpp's build_qwen3 asserts a whole-head rotation.
			if p.RopeDims != p.HeadDim {
				return fmt.Errorf("rope.dimension_count %d differs from the head dimension %d", p.RopeDims, p.HeadDim)
			}
			return nil
		},
		Tensors: func(p Params) []Tensor {
			return append(globalTensors(p, tiedOrUntied, NoBias, NoBias), PerLayer(p, func(pre string) []Tensor {
				ts := norm(pre+"attn_norm", p.Embd, NoBias)
				ts = append(ts, attnTensors(p, pre, NoBias, NoBias)...)
				ts = append(ts, norm(pre+"attn_q_norm", p.HeadDim, NoBias)...)
				ts = append(ts, norm(pre+"attn_k_norm", p.HeadDim, NoBias)...)
				ts = append(ts, norm(pre+"ffn_norm", p.Embd, NoBias)...)
				return append(ts, ffnTensors(p, pre, true, NoBias)...)
			})...)
		},
		Lower: func(l *Lowering) error {
			x := l.Embed(0)
			for il := range l.P.Layers {
				l.SetLayer(il)
				h := l.Norm(x, RMSNorm, "attn_norm", "attn_norm")
				x = l.Add(l.SelfAttention(h, Attention{NeoX: true, QKNorm: true}), x, "ffn_inp")
				h = l.Norm(x, RMSNorm, "ffn_norm", "ffn_norm")
				x = l.Add(l.FeedForward(h, FFN{Act: ops.SiLU, Gated: true}), x, "l_out")
			}
			l.Output(x, RMSNorm)
			return l.Err()
		},
	})
}
