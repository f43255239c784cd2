package model

import "github.com/weft-ml/weft/ops"

// llama: RMSNorm, normal RoPE, SiLU-gated FFN, scores scaled by
// 1/√head_dim; output tied when output.weight is absent (Llama 3.2). The
// projection biases llama.cpp allows are optional here too.
func init() {
	mustRegister(Arch{
		Name: "llama",
		Keys: commonKeys(keyRMSEps),
		Tensors: func(p Params) []Tensor {
			// Llama 3.1 and later: RoPE frequency factors (ropeOperands).
			global := append(globalTensors(p, tiedOrUntied, NoBias, NoBias), Vec(RopeFreqs, p.RopeDims/2).Opt())
			return append(global, PerLayer(p, func(pre string) []Tensor {
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
