package model

import (
	"fmt"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops"
)

// phi2 (Phi-2): LayerNorm with bias, attention and MLP in parallel on the
// same normalised input, biases on every projection and on the output,
// NeoX RoPE over the first rope.dimension_count dims of each head, q
// scaled by 1/√head_dim before the scores, a plain GELU MLP, untied output.
func init() {
	mustRegister(Arch{
		Name: "phi2",
		Keys: commonKeys(keyNormEps),
		Refuse: func(f *gguf.File, _ Params) error {
			// Phi-2 files converted from the original HF layout keep q, k
			// and v in one attn_qkv tensor; splitting its product needs a
			// column-slice op weft does not have yet.
			if _, ok := f.Tensor("blk.0.attn_qkv.weight"); ok {
				return fmt.Errorf("tensor %q (q, k and v fused in one tensor) is not supported yet: convert the model from the current HF layout (separate attn_q, attn_k, attn_v)", "blk.0.attn_qkv.weight")
			}
			return nil
		},
		Tensors: func(p Params) []Tensor {
			return append(globalTensors(p, untied, WithBias, WithBias), PerLayer(p, func(pre string) []Tensor {
				ts := norm(pre+"attn_norm", p.Embd, WithBias)
				ts = append(ts, attnTensors(p, pre, WithBias, WithBias)...)
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
