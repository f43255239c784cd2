package model

import (
	"fmt"
	"math"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

func init() { Register("llama", lowerLlama) }

// llamaParams reads the llama hyperparameters with llama.cpp's defaults.
func llamaParams(f *gguf.File) (Params, error) {
	k := func(s string) string { return "llama." + s }
	p := Params{
		Arch:     "llama",
		Embd:     int(f.Uint32(k("embedding_length"), 0)),
		Layers:   int(f.Uint32(k("block_count"), 0)),
		Heads:    int(f.Uint32(k("attention.head_count"), 0)),
		FFN:      int(f.Uint32(k("feed_forward_length"), 0)),
		CtxTrain: int(f.Uint32(k("context_length"), 2048)),
		NormEps:  f.Float32(k("attention.layer_norm_rms_epsilon"), 1e-5),
		RopeBase: f.Float32(k("rope.freq_base"), 10000),
	}
	p.KVHeads = int(f.Uint32(k("attention.head_count_kv"), uint32(p.Heads)))
	if p.Embd <= 0 || p.Layers <= 0 || p.Heads <= 0 || p.FFN <= 0 {
		return p, fmt.Errorf("missing or zero hyperparameters: embedding_length %d, block_count %d, head_count %d, feed_forward_length %d", p.Embd, p.Layers, p.Heads, p.FFN)
	}
	if p.Embd%p.Heads != 0 || p.KVHeads <= 0 || p.Heads%p.KVHeads != 0 {
		return p, fmt.Errorf("embedding %d, heads %d, kv heads %d are inconsistent", p.Embd, p.Heads, p.KVHeads)
	}
	p.HeadDim = p.Embd / p.Heads
	p.RopeDims = int(f.Uint32(k("rope.dimension_count"), uint32(p.HeadDim)))
	p.RopeFreqScale = 1
	if f.String(k("rope.scaling.type"), "linear") == "linear" {
		if factor := f.Float32(k("rope.scaling.factor"), 0); factor > 0 {
			p.RopeFreqScale = 1 / factor
		}
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return p, fmt.Errorf("missing tensor %q", "token_embd.weight")
	}
	if len(emb.Dims) != 2 {
		return p, fmt.Errorf("token_embd.weight has dims %v, want 2", emb.Dims)
	}
	p.VocabSize = int(emb.Dims[1])
	return p, nil
}

func lowerLlama(f *gguf.File) (*Lowered, error) {
	p, err := llamaParams(f)
	if err != nil {
		return nil, err
	}
	b := graph.NewBuilder()
	w := weights{f: f, b: b}
	l := &llamaLowering{p: p, b: b, w: w}
	if err := l.build(); err != nil {
		return nil, err
	}
	g, err := b.Graph()
	if err != nil {
		return nil, err
	}
	return &Lowered{Graph: g, Params: p}, nil
}

type llamaLowering struct {
	p   Params
	b   *graph.Builder
	w   weights
	pos int // positions input
}

func (l *llamaLowering) build() error {
	p, b := l.p, l.b
	tokens := b.Input("tokens", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
	l.pos = b.Input("positions", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
	rows := b.Input("rows", graph.Type{DType: graph.I32, Shape: graph.S(graph.Rows)})
	embd, err := l.w.matrix("token_embd.weight", p.VocabSize, p.Embd)
	if err != nil {
		return err
	}
	x := b.Op(ops.GetRows, "inp_embd", nil, embd, tokens)
	for il := 0; il < p.Layers; il++ {
		b.SetLayer(il)
		if x, err = l.layer(il, x); err != nil {
			return err
		}
	}
	b.SetLayer(-1)
	x = b.Op(ops.SelectRows, "out_rows", nil, x, rows)
	x, err = l.norm(x, "output_norm.weight", "result_norm")
	if err != nil {
		return err
	}
	out, err := l.outputWeight(embd)
	if err != nil {
		return err
	}
	logits := b.Op(ops.MatMul, "result_output", nil, x, out)
	b.Output("logits", logits)
	return b.Err()
}

// outputWeight returns output.weight, or the token embedding when the
// model ties them (no output.weight tensor).
func (l *llamaLowering) outputWeight(embd int) (int, error) {
	if _, ok := l.w.f.Tensor("output.weight"); !ok {
		return embd, nil
	}
	return l.w.matrix("output.weight", l.p.VocabSize, l.p.Embd)
}

func (l *llamaLowering) norm(x int, weight, name string) (int, error) {
	wt, err := l.w.vector(weight, l.p.Embd)
	if err != nil {
		return -1, err
	}
	n := l.b.Op(ops.RMSNorm, name, graph.Attrs{"eps": float64(l.p.NormEps)}, x)
	return l.b.Op(ops.Mul, name+"_w", nil, n, wt), nil
}

func (l *llamaLowering) layer(il int, x int) (int, error) {
	p, b := l.p, l.b
	pre := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
	mats := []struct {
		name       string
		rows, cols int
	}{
		{"attn_q", p.Heads * p.HeadDim, p.Embd}, {"attn_k", p.KVWidth(), p.Embd}, {"attn_v", p.KVWidth(), p.Embd},
		{"attn_output", p.Embd, p.Heads * p.HeadDim},
		{"ffn_gate", p.FFN, p.Embd}, {"ffn_up", p.FFN, p.Embd}, {"ffn_down", p.Embd, p.FFN},
	}
	wt := map[string]int{}
	for _, m := range mats {
		id, err := l.w.matrix(pre(m.name+".weight"), m.rows, m.cols)
		if err != nil {
			return -1, err
		}
		wt[m.name] = id
	}
	cur, err := l.norm(x, pre("attn_norm.weight"), pre("attn_norm"))
	if err != nil {
		return -1, err
	}
	q := b.Op(ops.MatMul, pre("q"), nil, cur, wt["attn_q"])
	k := b.Op(ops.MatMul, pre("k"), nil, cur, wt["attn_k"])
	v := b.Op(ops.MatMul, pre("v"), nil, cur, wt["attn_v"])
	q = b.Op(ops.RoPE, pre("q_rope"), l.ropeAttrs(p.Heads), q, l.pos)
	k = b.Op(ops.RoPE, pre("k_rope"), l.ropeAttrs(p.KVHeads), k, l.pos)
	attn := b.Op(ops.Attention, pre("attn"), graph.Attrs{
		"heads": float64(p.Heads), "kv_heads": float64(p.KVHeads), "head_dim": float64(p.HeadDim),
		"scale": float64(float32(1 / math.Sqrt(float64(p.HeadDim)))),
	}, q, k, v, l.pos)
	attnOut := b.Op(ops.MatMul, pre("attn_out"), nil, attn, wt["attn_output"])
	ffnIn := b.Op(ops.Add, pre("ffn_inp"), nil, attnOut, x)
	cur, err = l.norm(ffnIn, pre("ffn_norm.weight"), pre("ffn_norm"))
	if err != nil {
		return -1, err
	}
	gate := b.Op(ops.MatMul, pre("ffn_gate"), nil, cur, wt["ffn_gate"])
	up := b.Op(ops.MatMul, pre("ffn_up"), nil, cur, wt["ffn_up"])
	act := b.Op(ops.SiLU, pre("ffn_silu"), nil, gate)
	act = b.Op(ops.Mul, pre("ffn_gate_par"), nil, act, up)
	down := b.Op(ops.MatMul, pre("ffn_out"), nil, act, wt["ffn_down"])
	return b.Op(ops.Add, pre("l_out"), nil, down, ffnIn), b.Err()
}

func (l *llamaLowering) ropeAttrs(heads int) graph.Attrs {
	return graph.Attrs{
		"heads": float64(heads), "head_dim": float64(l.p.HeadDim), "dims": float64(l.p.RopeDims),
		"base": float64(l.p.RopeBase), "freq_scale": float64(l.p.RopeFreqScale), "neox": 0,
	}
}
