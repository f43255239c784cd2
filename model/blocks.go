package model

import (
	"math"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
)

// The building blocks every architecture lowers itself from. Each one
// emits the ops llama.cpp's graph has at that point, in its order of
// operations, so that results round as llama.cpp's do (c392e5094:
// llm_build_norm, llm_build_ffn, llm_build_kqv in src/llama.cpp). Optional
// biases are taken when the tensor is present, as llama.cpp does.

// NormKind selects RMSNorm (llama, qwen2, gemma) or LayerNorm (phi2).
type NormKind uint8

const (
	RMSNorm   NormKind = iota // x / √(mean(x²) + ε), then ·w
	LayerNorm                 // (x − mean) / √(var + ε), then ·w + b
)

// Embed looks the tokens up in token_embd.weight ("inp_embd") and, when
// scale is not 0, multiplies them by it ("inp_scaled": gemma's √n_embd).
func (l *Lowering) Embed(scale float32) int {
	x := l.Op(ops.GetRows, "inp_embd", nil, l.W("token_embd.weight"), l.tokens)
	if scale != 0 {
		x = l.Op(ops.Scale, "inp_scaled", graph.Attrs{"scale": float64(scale)}, x)
	}
	return x
}

// Norm normalises x and multiplies by tensor+".weight", then adds
// tensor+".bias" when the file has it: llm_build_norm. tensor and name
// are prefixed with the layer (Name); the nodes are name, name_w, name_b.
func (l *Lowering) Norm(x int, kind NormKind, tensor, name string) int {
	return l.normGroups(x, kind, tensor, name, 0)
}

// normGroups is Norm over each group of group values of a row (0: the
// whole row), the weight being one group wide: per-head norms.
func (l *Lowering) normGroups(x int, kind NormKind, tensor, name string, group int) int {
	op := ops.RMSNorm
	if kind == LayerNorm {
		op = ops.LayerNorm
	}
	tensor, name = l.Name(tensor), l.Name(name)
	wt := l.W(tensor + ".weight")
	attrs := graph.Attrs{"eps": float64(l.P.NormEps)}
	if group > 0 {
		attrs["group"] = float64(group)
	}
	n := l.Op(op, name, attrs, x)
	n = l.Op(ops.Mul, name+"_w", nil, n, wt)
	if l.Has(tensor + ".bias") {
		n = l.Op(ops.Add, name+"_b", nil, n, l.W(tensor+".bias"))
	}
	return n
}

// Linear is x·Wᵀ with W = tensor+".weight", plus tensor+".bias" when the
// file has it (the bias is added after the product, as ggml_add does).
// The nodes are Name(name) and Name(name)+"_b".
func (l *Lowering) Linear(x int, tensor, name string) int {
	return l.linearWith(x, l.Name(tensor), l.Name(tensor)+".weight", l.Name(name))
}

// linearWith is Linear with the full tensor prefix, the weight and the
// node name given (the output may read the token embedding).
func (l *Lowering) linearWith(x int, tensor, weight, name string) int {
	y := l.Op(ops.MatMul, name, nil, x, l.W(weight))
	if l.Has(tensor + ".bias") {
		y = l.Op(ops.Add, name+"_b", nil, y, l.W(tensor+".bias"))
	}
	return y
}

// projectQKV is the q, k and v projections of h, read from separate
// attn_q, attn_k and attn_v tensors or from one attn_qkv tensor holding
// their rows one after another (older Phi-2 files, Phi-3): each part is
// then a view of the fused tensor (gguf.ViewName), a projection like the
// others, which the passes may fuse again.
func (l *Lowering) projectQKV(h int) (q, k, v int) {
	fused := l.Name("attn_qkv")
	if !l.Has(fused + ".weight") {
		if !l.Has(l.Name("attn_q.weight")) {
			l.fail("missing tensor %q (or %q)", l.Name("attn_q.weight"), fused+".weight")
		}
		return l.Linear(h, "attn_q", "q"), l.Linear(h, "attn_k", "k"), l.Linear(h, "attn_v", "v")
	}
	p := l.P
	parts := []struct {
		name      string
		from, len int
	}{{"q", 0, p.QWidth()}, {"k", p.QWidth(), p.KVWidth()}, {"v", p.QWidth() + p.KVWidth(), p.KVWidth()}}
	out := make([]int, 3)
	for i, part := range parts {
		y := l.Op(ops.MatMul, l.Name(part.name), nil, h, l.view(fused+".weight", part.from, part.len))
		if l.Has(fused + ".bias") {
			y = l.Op(ops.Add, l.Name(part.name)+"_b", nil, y, l.view(fused+".bias", part.from, part.len))
		}
		out[i] = y
	}
	return out[0], out[1], out[2]
}

// Attention is how an architecture's self-attention differs from llama's.
type Attention struct {
	// NeoX rotates pairs (i, i+dims/2) instead of (2i, 2i+1).
	NeoX bool
	// ScaleQ multiplies q by 1/√head_dim after RoPE and leaves the scores
	// unscaled (phi2, gemma), instead of scaling the scores (llama, qwen2).
	// The two round differently.
	ScaleQ bool
	// Window, when positive, is a sliding window: a token attends to its
	// last Window positions only (llama.cpp's SWA mask; Phi-3, Gemma 2).
	Window int
	// SoftCap, when positive, soft-caps the scores (Gemma 2).
	SoftCap float32
	// QScaleDim, when set, is the dimension whose 1/√ ScaleQ uses instead
	// of the head dimension (Gemma 2 27B: n_embd/n_head).
	QScaleDim int
	// QKNorm RMS-normalises every head of q and k before RoPE, with the
	// head-wide weights attn_q_norm and attn_k_norm (Qwen 3).
	QKNorm bool
}

// SelfAttention is the attention sub-block on the normalised input h:
// q, k, v projections with optional biases, RoPE on q and k (over
// P.RopeDims of each head), grouped-query causal attention over the
// layer's KV cache, and the output projection with an optional bias.
func (l *Lowering) SelfAttention(h int, a Attention) int {
	p := l.P
	q, k, v := l.projectQKV(h)
	if a.QKNorm {
		q = l.normGroups(q, RMSNorm, "attn_q_norm", "q_norm", p.HeadDim)
		k = l.normGroups(k, RMSNorm, "attn_k_norm", "k_norm", p.HeadDim)
	}
	q = l.Op(ops.RoPE, l.Name("q_rope"), l.ropeAttrs(p.Heads, a.NeoX), l.ropeOperands(q)...)
	dim := p.HeadDim
	if a.QScaleDim > 0 {
		dim = a.QScaleDim
	}
	scale := float32(1 / math.Sqrt(float64(dim)))
	if a.ScaleQ {
		q = l.Op(ops.Scale, l.Name("q_scaled"), graph.Attrs{"scale": float64(scale)}, q)
		scale = 1
	}
	k = l.Op(ops.RoPE, l.Name("k_rope"), l.ropeAttrs(p.KVHeads, a.NeoX), l.ropeOperands(k)...)
	attrs := graph.Attrs{
		"heads": float64(p.Heads), "kv_heads": float64(p.KVHeads), "head_dim": float64(p.HeadDim),
		"scale": float64(scale),
	}
	if a.Window > 0 {
		attrs["window"] = float64(a.Window)
	}
	if a.SoftCap > 0 {
		attrs["softcap"] = float64(a.SoftCap)
	}
	attn := l.Op(ops.Attention, l.Name("attn"), attrs, q, k, v, l.pos)
	return l.Linear(attn, "attn_output", "attn_out")
}

func (l *Lowering) ropeAttrs(heads int, neox bool) graph.Attrs {
	n := 0.0
	if neox {
		n = 1
	}
	a := graph.Attrs{
		"heads": float64(heads), "head_dim": float64(l.P.HeadDim), "dims": float64(l.P.RopeDims),
		"base": float64(l.P.RopeBase), "freq_scale": float64(l.P.RopeFreqScale), "neox": n,
	}
	if f := l.P.RopeAttnFactor; f != 0 && f != 1 {
		a["attn_factor"] = float64(f)
	}
	if l.P.RopeYaRNCtx > 0 {
		// llama.cpp's defaults: extrapolation fully mixed in (ext_factor 1)
		// between 32 and 1 rotations over the training context.
		corr := ref.YaRNCorrDims(l.P.RopeDims, l.P.RopeYaRNCtx, l.P.RopeBase, 32, 1)
		a["ext_factor"], a["corr_lo"], a["corr_hi"] = 1, float64(corr[0]), float64(corr[1])
	}
	return a
}

// RopeFreqs is the tensor of per-pair frequency factors (Llama 3.1 and
// later); an architecture that declares it has its RoPE divide each
// pair's angle by its factor, as llama.cpp does.
const RopeFreqs = "rope_freqs.weight"

// ropeOperands are a RoPE node's operands: x, the positions and, when
// the file has them, the frequency factors.
func (l *Lowering) ropeOperands(x int) []int {
	factors := l.ropeFactors
	if factors == "" && l.Has(RopeFreqs) {
		factors = RopeFreqs
	}
	if factors != "" {
		return []int{x, l.pos, l.W(factors)}
	}
	return []int{x, l.pos}
}

// FFN is how an architecture's feed-forward block differs from llama's.
type FFN struct {
	// Act is ops.SiLU or ops.GELU.
	Act string
	// Gated computes act(gate·h) ⊙ (up·h) (llama, qwen2, gemma); otherwise
	// act(up·h) (phi2).
	Gated bool
	// GateInUp reads a gated FFN's gate and up rows from one ffn_up
	// tensor of twice the width, gate first (Phi-3; llama.cpp's SWIGLU
	// split), as views of it.
	GateInUp bool
}

// FeedForward is llm_build_ffn on the normalised input h: the up (and
// gate) projections with optional biases, the activation, and the down
// projection with an optional bias.
func (l *Lowering) FeedForward(h int, f FFN) int {
	actName := "ffn_silu"
	if f.Act == ops.GELU {
		actName = "ffn_gelu"
	}
	var cur int
	if f.Gated {
		var gate, up int
		if f.GateInUp {
			w, n := l.Name("ffn_up.weight"), l.P.FFN
			gate = l.Op(ops.MatMul, l.Name("ffn_gate"), nil, h, l.view(w, 0, n))
			up = l.Op(ops.MatMul, l.Name("ffn_up"), nil, h, l.view(w, n, n))
		} else {
			gate = l.Linear(h, "ffn_gate", "ffn_gate")
			up = l.Linear(h, "ffn_up", "ffn_up")
		}
		cur = l.Op(f.Act, l.Name(actName), nil, gate)
		cur = l.Op(ops.Mul, l.Name("ffn_gate_par"), nil, cur, up)
	} else {
		up := l.Linear(h, "ffn_up", "ffn_up")
		cur = l.Op(f.Act, l.Name(actName), nil, up)
	}
	return l.Linear(cur, "ffn_down", "ffn_out")
}

// Output selects the rows whose logits are wanted ("out_rows"),
// normalises them with output_norm ("result_norm") and multiplies by
// output.weight, or by the token embedding when the model ties them
// ("result_output"), adding output.bias when present. Selecting before the
// final norm gives the same rows as llama.cpp's inp_out_ids selection
// inside the last layer: every op after it works row by row.
func (l *Lowering) Output(x int, norm NormKind) { l.OutputSoftCap(x, norm, 0) }

// OutputSoftCap is Output with the logits soft-capped at cap when it is
// positive ("result_softcap": Gemma 2's final logit soft-capping).
func (l *Lowering) OutputSoftCap(x int, norm NormKind, cap float32) {
	l.SetLayer(-1)
	x = l.Op(ops.SelectRows, "out_rows", nil, x, l.rows)
	x = l.Norm(x, norm, "output_norm", "result_norm")
	weight := "token_embd.weight"
	if l.Has("output.weight") {
		weight = "output.weight"
	}
	logits := l.linearWith(x, "output", weight, "result_output")
	if cap > 0 {
		logits = l.Op(ops.SoftCap, "result_softcap", graph.Attrs{"cap": float64(cap)}, logits)
	}
	if l.Err() == nil {
		l.b.Output("logits", logits)
	}
}
