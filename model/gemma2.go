package model

import (
	"math"

	"github.com/weft-ml/weft/ops"
)

// gemma2 (Gemma 2): Gemma's block with RMSNorm·w after the attention
// (post_attention_norm) and after the FFN (post_ffw_norm), a sliding
// window of attention.sliding_window positions on the even layers,
// attention scores soft-capped at attn_logit_softcapping and the logits
// at final_logit_softcapping, q scaled by 1/√head_dim (1/√(n_embd/n_head)
// for the 46-layer 27B, as llama.cpp's build_gemma2), output tied.
func init() {
	mustRegister(Arch{
		Name: "gemma2",
		Keys: append(commonKeys(keyRMSEps), keyGemma2Window, keyAttnSoftCap, keyFinalSoftCap),
		Tensors: func(p Params) []Tensor {
			return append(globalTensors(p, alwaysTied, NoBias, NoBias), PerLayer(p, func(pre string) []Tensor {
				ts := norm(pre+"attn_norm", p.Embd, NoBias)
				ts = append(ts, attnTensors(p, pre, NoBias, NoBias)...)
				ts = append(ts, norm(pre+"post_attention_norm", p.Embd, NoBias)...)
				ts = append(ts, norm(pre+"ffn_norm", p.Embd, NoBias)...)
				ts = append(ts, ffnTensors(p, pre, true, NoBias)...)
				return append(ts, norm(pre+"post_ffw_norm", p.Embd, NoBias)...)
			})...)
		},
		Lower: func(l *Lowering) error {
			p := l.P
			x := l.Embed(float32(math.Sqrt(float64(p.Embd))))
			att := Attention{NeoX: true, ScaleQ: true, SoftCap: p.attnSoftCap}
			if p.Layers == 46 {
				att.QScaleDim = p.Embd / p.Heads
			}
			for il := range p.Layers {
				l.SetLayer(il)
				a := att
				if il%2 == 0 {
					a.Window = p.slidingWindow // llama.cpp: the even layers use the SWA mask
				}
				h := l.Norm(x, RMSNorm, "attn_norm", "attn_norm")
				h = l.Norm(l.SelfAttention(h, a), RMSNorm, "post_attention_norm", "attn_post_norm")
				x = l.Add(h, x, "sa_out")
				h = l.Norm(x, RMSNorm, "ffn_norm", "ffn_norm")
				h = l.Norm(l.FeedForward(h, FFN{Act: ops.GELU, Gated: true}), RMSNorm, "post_ffw_norm", "ffn_post_norm")
				x = l.Add(h, x, "l_out")
			}
			l.OutputSoftCap(x, RMSNorm, p.finalSoftCap)
			return l.Err()
		},
	})
}

// Gemma 2's keys, with llama.cpp's defaults.
var (
	keyGemma2Window = Key{Name: "attention.sliding_window", Default: 4096, Max: maxCtx, Set: func(p *Params, v float64) { p.slidingWindow = int(v) }}
	keyAttnSoftCap  = Key{Name: "attn_logit_softcapping", Kind: KeyFloat, Default: 50, Set: func(p *Params, v float64) { p.attnSoftCap = float32(v) }}
	keyFinalSoftCap = Key{Name: "final_logit_softcapping", Kind: KeyFloat, Default: 30, Set: func(p *Params, v float64) { p.finalSoftCap = float32(v) }}
)
