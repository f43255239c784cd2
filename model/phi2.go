package model

import "github.com/weft-ml/weft/ops"

// phi2 (Phi-2): LayerNorm with bias, attention and MLP in parallel on the
// same normalised input, biases on every projection and on the output,
// NeoX RoPE over the first rope.dimension_count dims of each head, q
// scaled by 1/√head_dim before the scores, a plain GELU MLP, untied output.
// q, k and v come from separate tensors or, in files converted from the
// original HF layout, from one attn_qkv tensor.
func init() {
	mustRegister(Arch{
		Name: "phi2",
		Keys: commonKeys(keyNormEps),
		Tensors: func(p Params) []Tensor {
			return append(globalTensors(p, untied, WithBias, WithBias), PerLayer(p, func(pre string) []Tensor {
				ts := norm(pre+"attn_norm", p.Embd, WithBias)
				ts = append(ts, fusedOrSeparateQKV(p, pre, WithBias)...)
				return append(ts, ffnTensors(p, pre, false, WithBias)...)
			})...)
		},
		Lower: func(l *Lowering) error {
			x := l.Embed(0)
			for il := range l.P.Layers {
				l.SetLayer(il)
				h := l.Norm(x, LayerNorm, "attn_norm", "attn_norm")
				attn := l.SelfAttention(h, Attention{NeoX: true, ScaleQ: true})
				mlp := l.FeedForward(h, FFN{Act: ops.GELU})
				// (attn + mlp) + x, in llama.cpp's order.
				x = l.Add(l.Add(attn, mlp, "attn_mlp"), x, "l_out")
			}
			l.Output(x, LayerNorm)
			return l.Err()
		},
	})
}
