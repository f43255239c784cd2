package model

import (
	"fmt"

	"github.com/weft-ml/weft/ops"
)

// phi3 (Phi-3, Phi-3.5 mini and medium): llama's block with q, k and v in
// one attn_qkv tensor and the SwiGLU gate and up in one ffn_up tensor
// (gate first), NeoX RoPE, q scaled by 1/√head_dim before the scores, a
// sliding attention window of attention.sliding_window positions, untied
// output. LongRoPE files carry per-pair factors for short and long
// contexts; llama.cpp takes the long ones when the context exceeds
// rope.scaling.original_context_length (else the training context), and
// so does the lowering for the context it is made for (LowerFor).
func init() {
	mustRegister(Arch{
		Name: "phi3",
		Keys: append(commonKeys(keyRMSEps), keySlidingWindow),
		Check: func(p *Params) error {
			if p.slidingWindow == 0 {
				p.slidingWindow = phi3DefaultWindow(*p)
			}
			if p.slidingWindow <= 0 {
				return fmt.Errorf("attention.sliding_window is missing and this Phi-3 has no known default (llama.cpp refuses it too)")
			}
			return nil
		},
		Tensors: func(p Params) []Tensor {
			global := append(globalTensors(p, untied, NoBias, NoBias),
				Vec(ropeFactorsShort, p.RopeDims/2).Opt(), Vec(ropeFactorsLong, p.RopeDims/2).Opt())
			return append(global, PerLayer(p, func(pre string) []Tensor {
				ts := norm(pre+"attn_norm", p.Embd, NoBias)
				ts = append(ts, fusedOrSeparateQKV(p, pre, NoBias)...)
				ts = append(ts, norm(pre+"ffn_norm", p.Embd, NoBias)...)
				ts = append(ts, Mat(pre+"ffn_up.weight", 2*p.FFN, p.Embd))
				return append(ts, Mat(pre+"ffn_down.weight", p.Embd, p.FFN))
			})...)
		},
		Lower: func(l *Lowering) error {
			if l.Has(ropeFactorsShort) {
				l.chooseLongRoPE()
			}
			x := l.Embed(0)
			for il := range l.P.Layers {
				l.SetLayer(il)
				h := l.Norm(x, RMSNorm, "attn_norm", "attn_norm")
				x = l.Add(l.SelfAttention(h, Attention{NeoX: true, ScaleQ: true, Window: l.P.slidingWindow}), x, "ffn_inp")
				h = l.Norm(x, RMSNorm, "ffn_norm", "ffn_norm")
				x = l.Add(l.FeedForward(h, FFN{Act: ops.SiLU, Gated: true, GateInUp: true}), x, "l_out")
			}
			l.Output(x, RMSNorm)
			return l.Err()
		},
	})
}

// LongRoPE's per-pair factors (Phi-3 128k): short below the original
// context, long above.
const (
	ropeFactorsShort = "rope_factors_short.weight"
	ropeFactorsLong  = "rope_factors_long.weight"
)

var keySlidingWindow = Key{Name: "attention.sliding_window", Max: maxCtx, Set: func(p *Params, v float64) { p.slidingWindow = int(v) }}

// phi3DefaultWindow is llama.cpp's window for files written before the
// key existed (Phi-3 mini/medium 4k and 128k), or 0.
func phi3DefaultWindow(p Params) int {
	switch {
	case (p.Layers == 32 || p.Layers == 40) && p.CtxTrain == 4096:
		return 2047
	case p.Layers == 32 && p.KVHeads == 32 && p.CtxTrain == 131072:
		return 262144
	case p.Layers == 40 && p.CtxTrain == 131072:
		return 131072
	}
	return 0
}

// chooseLongRoPE picks the factors llama.cpp's build_rope_factors does
// for the lowering's context: the short ones up to the original context,
// the long ones past it (none when the file lacks them, as in
// llama.cpp).
func (l *Lowering) chooseLongRoPE() {
	orig := l.P.ropeOrigCtx
	if orig == 0 {
		orig = l.P.CtxTrain
	}
	l.P.LongRoPECtx = orig
	l.ropeFactors = ropeFactorsShort
	if l.ctx > orig {
		l.P.LongRoPE = true
		l.ropeFactors = ""
		if l.Has(ropeFactorsLong) {
			l.ropeFactors = ropeFactorsLong
		}
	}
}
