package ops

import (
	"fmt"

	"github.com/weft-ml/weft/graph"
)

// Ops introduced by the optimisation passes rather than by lowerings. Each
// fused op does the same arithmetic, in the same order, as the nodes it
// replaces, so results do not change.
const (
	// MatMulQKV (x, wq, wk, wv) -> F32[T, Nq+Nk+Nv]: the three projections
	// of one activation, quantized once. Its result is read through Part.
	MatMulQKV = "MatMulQKV"
	// MatMulGateUpSwiGLU (x, wg, wu) -> silu(x·wgᵀ) * (x·wuᵀ).
	MatMulGateUpSwiGLU = "MatMulGateUpSwiGLU"
	// MatMulGateUpGeGLU (x, wg, wu) -> gelu(x·wgᵀ) * (x·wuᵀ): the GELU-gated
	// feed-forward of Gemma, with GELU's binary16 table.
	MatMulGateUpGeGLU = "MatMulGateUpGeGLU"
	// MatMulAdd (x, w, r) -> x·wᵀ + r: a matmul with its residual add folded in.
	MatMulAdd = "MatMulAdd"
	// MatMulBias (x, w, b F32[N]) -> x·wᵀ + b: a matmul with its bias row
	// added to each product (the projections of qwen2 and phi2).
	MatMulBias = "MatMulBias"
	// RMSNormMul (x, w) -> RMSNorm(x) * w, attribute eps.
	RMSNormMul = "RMSNormMul"
	// LayerNormMul (x, w) -> LayerNorm(x) * w, attribute eps.
	LayerNormMul = "LayerNormMul"
	// LayerNormMulAdd (x, w, b) -> LayerNorm(x) * w + b, attribute eps.
	LayerNormMulAdd = "LayerNormMulAdd"
	// Part (x) -> columns [start, start+width) of a multi-part result.
	Part = "Part"
	// Dequantize (w [N,K]) -> F32[N,K]: a weight widened to float32.
	Dequantize = "Dequantize"
	// Copy (x) -> x: moves a value between backends.
	Copy = "Copy"
)

// Fused lists the fused ops, for tools that mark them.
var Fused = []string{MatMulQKV, MatMulGateUpSwiGLU, MatMulGateUpGeGLU, MatMulAdd, MatMulBias, RMSNormMul, LayerNormMul, LayerNormMulAdd}

// IsFused reports whether op is one of the fused ops.
func IsFused(op string) bool {
	for _, f := range Fused {
		if f == op {
			return true
		}
	}
	return false
}

func init() {
	for _, d := range []graph.OpDef{
		{Name: MatMulQKV, Arity: 4, Infer: inferMatMulParts},
		{Name: MatMulGateUpSwiGLU, Arity: 3, Infer: inferGateUp},
		{Name: MatMulGateUpGeGLU, Arity: 3, Infer: inferGateUp},
		{Name: MatMulAdd, Arity: 3, Infer: inferMatMulAdd},
		{Name: MatMulBias, Arity: 3, Infer: inferMatMulBias},
		{Name: RMSNormMul, Arity: 2, Infer: inferNormMul},
		{Name: LayerNormMul, Arity: 2, Infer: inferNormMul},
		{Name: LayerNormMulAdd, Arity: 3, Infer: inferNormMulAdd},
		{Name: Part, Arity: 1, Infer: inferPart},
		{Name: Dequantize, Arity: 1, Infer: inferDequantize},
		{Name: Copy, Arity: 1, Infer: func(in []graph.Type, _ graph.Attrs) (graph.Type, error) { return in[0], nil }},
	} {
		if err := graph.Register(d); err != nil {
			panic(err) // duplicate built-in: a programming error caught by any test
		}
	}
}

// inferMatMulParts checks every weight against x and returns the
// concatenated output width.
func inferMatMulParts(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	var width int64
	for _, w := range in[1:] {
		t, err := inferMatMul([]graph.Type{in[0], w}, a)
		if err != nil {
			return graph.Type{}, err
		}
		width += t.Shape[1].N
	}
	return graph.Type{DType: graph.F32, Shape: graph.Shape{in[0].Shape[0], graph.D(width)}}, nil
}

func inferGateUp(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	g, err := inferMatMul(in[:2], a)
	if err != nil {
		return graph.Type{}, err
	}
	u, err := inferMatMul([]graph.Type{in[0], in[2]}, a)
	if err != nil {
		return graph.Type{}, err
	}
	if !g.Shape.Equal(u.Shape) {
		return graph.Type{}, fmt.Errorf("gate %s and up %s differ", in[1], in[2])
	}
	return g, nil
}

func inferMatMulAdd(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	t, err := inferMatMul(in[:2], a)
	if err != nil {
		return graph.Type{}, err
	}
	if in[2].DType != graph.F32 || !in[2].Shape.Equal(t.Shape) {
		return graph.Type{}, fmt.Errorf("residual %s does not match the product %s", in[2], t)
	}
	return t, nil
}

// inferMatMulBias accepts only a 1-D bias of the product's width: the
// kernels read it as one row.
func inferMatMulBias(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	t, err := inferMatMul(in[:2], a)
	if err != nil {
		return graph.Type{}, err
	}
	if b := in[2]; b.DType != graph.F32 || len(b.Shape) != 1 || b.Shape[0] != t.Shape[1] {
		return graph.Type{}, fmt.Errorf("bias %s is not an F32 vector of the product's width %s", b, t.Shape[1])
	}
	return t, nil
}

func inferNormMul(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	t, err := inferNorm(in[:1], a)
	if err != nil {
		return graph.Type{}, err
	}
	if _, err := inferRowOperand(in[0], in[1]); err != nil {
		return graph.Type{}, err
	}
	// The fused kernels multiply each normalised group by the whole row.
	if g := NormGroup(a, int(t.Shape.Inner().N)); rowWidth(in[1]) != g {
		return graph.Type{}, fmt.Errorf("weight %s is not one row of the normalised width %d", in[1], g)
	}
	return t, nil
}

func inferNormMulAdd(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	if _, err := inferNormMul(in[:2], a); err != nil {
		return graph.Type{}, err
	}
	return inferRowOperand(in[0], in[2])
}

// inferRowOperand accepts only a one-row operand broadcast over x: the
// fused norm kernels read it that way.
func inferRowOperand(x, b graph.Type) (graph.Type, error) {
	t, err := inferBroadcast([]graph.Type{x, b}, nil)
	if err != nil {
		return graph.Type{}, err
	}
	if b.Shape.Equal(x.Shape) {
		return graph.Type{}, fmt.Errorf("want a single row, got %s", b)
	}
	return t, nil
}

func inferPart(in []graph.Type, a graph.Attrs) (graph.Type, error) {
	x := in[0]
	if err := isF32Matrix(x); err != nil {
		return graph.Type{}, err
	}
	start, width := int64(a.Int("start")), int64(a.Int("width"))
	if start < 0 || width <= 0 || start+width > x.Shape[1].N {
		return graph.Type{}, fmt.Errorf("columns [%d, %d) outside %s", start, start+width, x)
	}
	return graph.Type{DType: graph.F32, Shape: graph.Shape{x.Shape[0], graph.D(width)}}, nil
}

func inferDequantize(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	w := in[0]
	if !isMatrix(w) || w.Shape[0].IsSym() {
		return graph.Type{}, fmt.Errorf("want a constant weight matrix, got %s", w)
	}
	return graph.Type{DType: graph.F32, Shape: w.Shape}, nil
}

// MatMulWeights returns the weight operands (node IDs) of a matmul-family
// node: the second input of MatMul, MatMulAdd and MatMulBias, every input
// after the activations of MatMulQKV and the gate-up ops; nil for other
// ops.
func MatMulWeights(n *graph.Node) []int {
	switch n.Op {
	case MatMul, MatMulAdd, MatMulBias:
		return n.Inputs[1:2]
	case MatMulQKV, MatMulGateUpSwiGLU, MatMulGateUpGeGLU:
		return n.Inputs[1:]
	}
	return nil
}
