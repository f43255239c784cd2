package ops

import (
	"fmt"
	"math"

	"github.com/weft-ml/weft/graph"
)

// Names of the built-in ops.
const (
	GetRows    = "GetRows"    // (table [V,D], ids I32[T]) -> F32[T,D]: embedding lookup, any table type
	SelectRows = "SelectRows" // (x F32[T,D], rows I32[R]) -> F32[R,D]
	RMSNorm    = "RMSNorm"    // (x) -> x / rms(x), over each row or each group of its values (attribute group)
	LayerNorm  = "LayerNorm"  // (x) -> (x - mean) / std
	Mul        = "Mul"        // (a, b) elementwise; b broadcast over rows when it is one row
	Add        = "Add"        // (a, b) elementwise, broadcast like Mul
	Scale      = "Scale"      // (x) -> x * scale
	Softmax    = "Softmax"    // (x) -> softmax(x * scale) along rows
	SiLU       = "SiLU"       // (x) -> x * sigmoid(x)
	GELU       = "GELU"       // (x) -> tanh-approximated GELU
	SoftCap    = "SoftCap"    // (x) -> cap·tanh(x/cap) (Gemma 2's final logit soft-capping)
	SwiGLU     = "SwiGLU"     // (gate, up) -> silu(gate) * up
	MatMul     = "MatMul"     // (x F32[T,K], w [N,K]) -> F32[T,N]; w may be quantized
	RoPE       = "RoPE"       // (x F32[T,H*hd], pos I32[T] [, factors F32[dims/2]]) -> rotated x
	Attention  = "Attention"  // (q, k, v, pos) -> causal GQA attention over the layer's KV cache, each token over its own sequence's cells (backends.Batch.Seqs)
)

func init() {
	for _, d := range []graph.OpDef{
		{Name: GetRows, Arity: 2, Infer: inferGetRows},
		{Name: SelectRows, Arity: 2, Infer: inferSelectRows},
		{Name: RMSNorm, Arity: 1, Infer: inferNorm},
		{Name: LayerNorm, Arity: 1, Infer: unaryF32},
		{Name: Mul, Arity: 2, Infer: inferBroadcast},
		{Name: Add, Arity: 2, Infer: inferBroadcast},
		{Name: Scale, Arity: 1, Infer: unaryF32},
		{Name: Softmax, Arity: 1, Infer: unaryF32},
		{Name: SiLU, Arity: 1, Infer: unaryF32},
		{Name: GELU, Arity: 1, Infer: unaryF32},
		{Name: SoftCap, Arity: 1, Infer: inferSoftCap},
		{Name: SwiGLU, Arity: 2, Infer: inferSame},
		{Name: MatMul, Arity: 2, Infer: inferMatMul},
		{Name: RoPE, Arity: -1, Infer: inferRoPE}, // 2 operands, or 3 with frequency factors
		{Name: Attention, Arity: 4, Infer: inferAttention},
	} {
		if err := graph.Register(d); err != nil {
			panic(err) // duplicate built-in: a programming error caught by any test
		}
	}
}

func isMatrix(t graph.Type) bool { return len(t.Shape) == 2 && !t.Shape[1].IsSym() }

func isF32Matrix(t graph.Type) error {
	if t.DType != graph.F32 || !isMatrix(t) {
		return fmt.Errorf("want an F32 matrix with a constant inner dimension, got %s", t)
	}
	return nil
}

func isIndexVector(t graph.Type) error {
	if t.DType != graph.I32 || len(t.Shape) != 1 {
		return fmt.Errorf("want an I32 vector of indices, got %s", t)
	}
	return nil
}

func unaryF32(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	if err := isF32Matrix(in[0]); err != nil {
		return graph.Type{}, err
	}
	return in[0], nil
}

func inferSame(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	if err := isF32Matrix(in[0]); err != nil {
		return graph.Type{}, err
	}
	if !in[0].Shape.Equal(in[1].Shape) || in[1].DType != graph.F32 {
		return graph.Type{}, fmt.Errorf("operand types differ: %s and %s", in[0], in[1])
	}
	return in[0], nil
}

// inferBroadcast accepts b equal to a, or b a single row ([D] or [1,D]) of a's width.
func inferBroadcast(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	a, b := in[0], in[1]
	if err := isF32Matrix(a); err != nil {
		return graph.Type{}, err
	}
	if b.DType != graph.F32 {
		return graph.Type{}, fmt.Errorf("second operand must be F32, got %s", b)
	}
	if a.Shape.Equal(b.Shape) {
		return a, nil
	}
	// b is one row repeated along a's rows; its width may also divide
	// a's, repeated within each row (ggml's broadcast: a per-head weight).
	width := int(a.Shape.Inner().N)
	bw := rowWidth(b)
	if bw <= 0 || width%bw != 0 {
		return graph.Type{}, fmt.Errorf("cannot broadcast %s over %s", b, a)
	}
	return a, nil
}

// rowWidth is the width of a single row (shape [n] or [1, n]), or 0.
func rowWidth(b graph.Type) int {
	switch {
	case len(b.Shape) == 1 && !b.Shape[0].IsSym():
		return int(b.Shape[0].N)
	case len(b.Shape) == 2 && b.Shape[0] == graph.D(1) && !b.Shape[1].IsSym():
		return int(b.Shape[1].N)
	}
	return 0
}

// NormGroup is the number of values a norm node normalises together:
// its group attribute (Qwen 3's per-head q and k norms) or, without one,
// the whole row of width values.
func NormGroup(a graph.Attrs, width int) int {
	if g := a.Int("group"); g > 0 {
		return g
	}
	return width
}

// inferNorm checks that a norm's group, when it has one, divides its
// rows.
func inferNorm(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	t, err := unaryF32(in, a)
	if err != nil {
		return graph.Type{}, err
	}
	g := a["group"]
	if w := int(t.Shape.Inner().N); g != 0 && (g != float64(int(g)) || g < 1 || w%int(g) != 0) {
		return graph.Type{}, fmt.Errorf("group %v must be a whole number dividing the row width %d", g, w)
	}
	return t, nil
}

func inferGetRows(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	table, ids := in[0], in[1]
	if !isMatrix(table) {
		return graph.Type{}, fmt.Errorf("table must be a matrix, got %s", table)
	}
	if err := isIndexVector(ids); err != nil {
		return graph.Type{}, err
	}
	return graph.Type{DType: graph.F32, Shape: graph.Shape{ids.Shape[0], table.Shape[1]}}, nil
}

func inferSelectRows(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	if err := isF32Matrix(in[0]); err != nil {
		return graph.Type{}, err
	}
	if err := isIndexVector(in[1]); err != nil {
		return graph.Type{}, err
	}
	return graph.Type{DType: graph.F32, Shape: graph.Shape{in[1].Shape[0], in[0].Shape[1]}}, nil
}

func inferMatMul(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	x, w := in[0], in[1]
	if err := isF32Matrix(x); err != nil {
		return graph.Type{}, err
	}
	if !isMatrix(w) || w.Shape[0].IsSym() {
		return graph.Type{}, fmt.Errorf("weight must be a constant matrix, got %s", w)
	}
	if x.Shape[1] != w.Shape[1] {
		return graph.Type{}, fmt.Errorf("inner dimensions differ: %s · %sᵀ", x, w)
	}
	return graph.Type{DType: graph.F32, Shape: graph.Shape{x.Shape[0], w.Shape[0]}}, nil
}

func inferRoPE(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	if len(in) != 2 && len(in) != 3 {
		return graph.Type{}, fmt.Errorf("takes 2 inputs (x, positions) or 3 (x, positions, frequency factors), got %d", len(in))
	}
	x, pos := in[0], in[1]
	if err := isF32Matrix(x); err != nil {
		return graph.Type{}, err
	}
	if err := isIndexVector(pos); err != nil || pos.Shape[0] != x.Shape[0] {
		return graph.Type{}, fmt.Errorf("positions %s do not match %s", pos, x)
	}
	heads, hd, dims := a.Int("heads"), a.Int("head_dim"), a.Int("dims")
	if heads <= 0 || hd <= 0 || int64(heads*hd) != x.Shape[1].N {
		return graph.Type{}, fmt.Errorf("heads %d × head_dim %d does not match width %s", heads, hd, x.Shape[1])
	}
	if dims <= 0 || dims > hd || dims%2 != 0 {
		return graph.Type{}, fmt.Errorf("rotated dims %d must be even and in (0, %d]", dims, hd)
	}
	if a["base"] <= 0 || a["freq_scale"] <= 0 {
		return graph.Type{}, fmt.Errorf("base %v and freq_scale %v must be positive", a["base"], a["freq_scale"])
	}
	if a["ext_factor"] < 0 || a["attn_factor"] < 0 || a["corr_lo"] < 0 || a["corr_hi"] < a["corr_lo"] {
		return graph.Type{}, fmt.Errorf("YaRN ext_factor %v, attn_factor %v and correction dims [%v, %v] must be non-negative and ordered",
			a["ext_factor"], a["attn_factor"], a["corr_lo"], a["corr_hi"])
	}
	if len(in) == 3 {
		if f := in[2]; f.DType != graph.F32 || len(f.Shape) != 1 || f.Shape[0] != graph.D(int64(dims/2)) {
			return graph.Type{}, fmt.Errorf("frequency factors %s: want F32[%d] (one per rotated pair)", f, dims/2)
		}
	}
	return x, nil
}

func inferAttention(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	q, k, v, pos := in[0], in[1], in[2], in[3]
	for _, t := range []graph.Type{q, k, v} {
		if err := isF32Matrix(t); err != nil {
			return graph.Type{}, err
		}
	}
	heads, kvHeads, hd := a.Int("heads"), a.Int("kv_heads"), a.Int("head_dim")
	if heads <= 0 || kvHeads <= 0 || hd <= 0 || heads%kvHeads != 0 {
		return graph.Type{}, fmt.Errorf("heads %d must be a positive multiple of kv_heads %d", heads, kvHeads)
	}
	if q.Shape[1].N != int64(heads*hd) || k.Shape[1].N != int64(kvHeads*hd) || !k.Shape.Equal(v.Shape) {
		return graph.Type{}, fmt.Errorf("q %s, k %s, v %s do not match %d heads, %d kv heads of %d", q, k, v, heads, kvHeads, hd)
	}
	if q.Shape[0] != k.Shape[0] {
		return graph.Type{}, fmt.Errorf("q has %s tokens, k %s", q.Shape[0], k.Shape[0])
	}
	if err := isIndexVector(pos); err != nil || pos.Shape[0] != q.Shape[0] {
		return graph.Type{}, fmt.Errorf("positions %s do not match %s", pos, q)
	}
	if w := a["window"]; w < 0 || w != float64(int64(w)) {
		return graph.Type{}, fmt.Errorf("sliding window %v must be a whole number of positions (0: none)", w)
	}
	if c := a["softcap"]; c < 0 || math.IsInf(c, 0) || math.IsNaN(c) {
		return graph.Type{}, fmt.Errorf("soft-capping %v must be a positive number (0: none)", c)
	}
	return q, nil
}

func inferSoftCap(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	if c := a["cap"]; !(c > 0) || math.IsInf(c, 0) {
		return graph.Type{}, fmt.Errorf("soft-capping %v must be a positive number", c)
	}
	return unaryF32(in, a)
}
