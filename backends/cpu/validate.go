package cpu

import (
	"fmt"
	"math"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/quant"
)

// Limits on what a plan or a caller may ask of the backend. Every size
// derived from them is computed with internal/safemath, so none wraps.
const (
	// MaxContext is the largest KV cache, in positions (positions are int32).
	MaxContext = math.MaxInt32
	// MaxBatch is the largest batch (Options.MaxTokens); a batch never
	// holds more tokens than the context.
	MaxBatch = MaxContext
	// MaxThreads is the most threads a program shares its work among
	// (ggml's GGML_MAX_N_THREADS).
	MaxThreads = 512

	maxDim  = 1 << 31 // largest constant dimension of a value
	maxAttr = 1 << 24 // largest head count, head dimension, rotated dims
)

// operand is how a kernel reads one of its inputs.
type operand uint8

const (
	opAct      operand = iota // a computed F32 [T|R, D] value, read from its activation buffer
	opRow                     // a 1-D F32 weight, read as float32s (norm weights, biases)
	opActOrRow                // either (Mul and Add broadcast a row over every row)
	opMat                     // a 2-D weight, read as raw bytes (matmul weights, embedding tables)
	opIDs                     // one of the graph's I32 inputs
	opAny                     // any of these (custom ops: ops.Tensor views every kind)
)

func (o operand) String() string {
	return [...]string{"a computed F32 value", "a 1-D F32 weight", "a computed F32 value or a 1-D F32 weight", "a 2-D weight", "a graph input of indices", "a value, weight or graph input"}[o]
}

// operands lists, for every op with a CPU kernel, how the kernel reads
// each input. A kernel trusts this form: checkGraph enforces it.
var operands = map[string][]operand{
	ops.GetRows:            {opMat, opIDs},
	ops.SelectRows:         {opAct, opIDs},
	ops.RMSNorm:            {opAct},
	ops.LayerNorm:          {opAct},
	ops.Softmax:            {opAct},
	ops.Mul:                {opAct, opActOrRow},
	ops.Add:                {opAct, opActOrRow},
	ops.Scale:              {opAct},
	ops.SiLU:               {opAct},
	ops.GELU:               {opAct},
	ops.SoftCap:            {opAct},
	ops.SwiGLU:             {opAct, opAct},
	ops.MatMul:             {opAct, opMat},
	ops.RoPE:               {opAct, opIDs, opRow}, // the factors are optional (optionalOperands)
	ops.Attention:          {opAct, opAct, opAct, opIDs},
	ops.MatMulQKV:          {opAct, opMat, opMat, opMat},
	ops.MatMulGateUpSwiGLU: {opAct, opMat, opMat},
	ops.MatMulGateUpGeGLU:  {opAct, opMat, opMat},
	ops.MatMulAdd:          {opAct, opMat, opAct},
	ops.MatMulBias:         {opAct, opMat, opRow},
	ops.RMSNormMul:         {opAct, opRow},
	ops.LayerNormMul:       {opAct, opRow},
	ops.LayerNormMulAdd:    {opAct, opRow, opRow},
	ops.Part:               {opAct},
	ops.Copy:               {opAct},
}

// optionalOperands counts the trailing operands of operands' list an op
// may leave out: RoPE without frequency factors.
var optionalOperands = map[string]int{ops.RoPE: 1}

// intAttrs lists the integer attributes a kernel sizes or indexes with,
// and their smallest allowed value.
var intAttrs = map[string]map[string]int{
	ops.Attention:  {"heads": 1, "kv_heads": 1, "head_dim": 1, "window": 0},
	ops.RoPE:       {"heads": 1, "head_dim": 1, "dims": 1},
	ops.Part:       {"start": 0, "width": 1},
	ops.RMSNorm:    {"group": 0},
	ops.RMSNormMul: {"group": 0},
}

// graphInputs are the inputs State.Run binds, with their types.
var graphInputs = []struct {
	name string
	dim  graph.Dim
}{{"tokens", graph.Tokens}, {"positions", graph.Tokens}, {"rows", graph.Rows}}

func describe(n *graph.Node) string { return fmt.Sprintf("node %d (%s %q)", n.ID, n.Op, n.Name) }

// computed reports whether n is run by a kernel (not an Input or Weight).
func computed(n *graph.Node) bool {
	_, ok := kernels[n.Op]
	return ok || isCustom(n.Op)
}

// checkGraph verifies that g, already checked by graph.Verify, has the
// form the kernels assume: the three bound inputs, values of one or two
// bounded dimensions, activations F32 [T|R, D], every operand of the kind
// its kernel reads, integer attributes in range and a computed "logits"
// output. Sizes, the memory plan and the weights themselves are checked
// as they are bound (Compile) and allocated (NewState). A plan that
// passes cannot make a kernel index outside a buffer.
//
// With placed set (Options.Placed) the nodes of other backends are
// theirs to check: only the CPU's own nodes are, and a value another
// backend computes is a valid operand of a Copy.
func checkGraph(g *graph.Graph, placed bool) error {
	bound := map[int]string{}
	for _, in := range graphInputs {
		id, ok := g.Inputs[in.name]
		if !ok {
			return fmt.Errorf("graph input %q is missing", in.name)
		}
		n := g.Node(id)
		if n == nil || n.Op != "Input" {
			return fmt.Errorf("graph input %q refers to node %d, which is not an Input node", in.name, id)
		}
		if other, dup := bound[id]; dup {
			return fmt.Errorf("graph inputs %q and %q are the same node %d", other, in.name, id)
		}
		if want := (graph.Type{DType: graph.I32, Shape: graph.Shape{in.dim}}); n.Type.DType != want.DType || !n.Type.Shape.Equal(want.Shape) {
			return fmt.Errorf("graph input %q (node %d) has type %s, want %s", in.name, id, n.Type, want)
		}
		bound[id] = in.name
	}
	for name, id := range g.Inputs {
		if bound[id] != name {
			return fmt.Errorf("graph input %q: the CPU backend binds only tokens, positions and rows", name)
		}
	}
	for _, n := range g.Nodes {
		if placed && backends.Foreign(n, name) {
			continue
		}
		if err := checkNode(g, n, bound, placed); err != nil {
			return err
		}
	}
	out, ok := g.Outputs["logits"]
	if !ok {
		return fmt.Errorf("graph has no \"logits\" output")
	}
	if n := g.Node(out); n == nil || !computed(n) && !(placed && backends.Foreign(n, name)) {
		return fmt.Errorf("graph output \"logits\" is node %d, which is not a computed value", out)
	}
	return nil
}

func checkNode(g *graph.Graph, n *graph.Node, bound map[int]string, placed bool) error {
	if err := checkShape(n); err != nil {
		return err
	}
	sh := n.Type.Shape
	switch {
	case n.Op == "Input":
		if _, ok := bound[n.ID]; !ok {
			return fmt.Errorf("%s is not one of the graph inputs tokens, positions, rows", describe(n))
		}
		return nil
	case n.Op == "Weight":
		if sh[0].IsSym() {
			return fmt.Errorf("%s: a weight's shape %s must be constant", describe(n), sh)
		}
		if !quant.Supported(n.Type.DType) {
			return quant.UnsupportedError(n.Tensor, n.Type.DType)
		}
		return nil
	case !computed(n):
		return fmt.Errorf("%s: no CPU kernel for op %s", describe(n), n.Op)
	}
	if n.Type.DType != graph.F32 || len(sh) != 2 || !sh[0].IsSym() {
		return fmt.Errorf("%s: type %s: a computed value must be F32 [T or R, width]", describe(n), n.Type)
	}
	want := operands[n.Op]
	if isCustom(n.Op) {
		want = make([]operand, len(n.Inputs))
		for i := range want {
			want[i] = opAny
		}
	}
	if omitted := len(want) - len(n.Inputs); omitted > 0 && omitted <= optionalOperands[n.Op] {
		want = want[:len(n.Inputs)]
	}
	if len(want) != len(n.Inputs) {
		return fmt.Errorf("%s: %d operands, the CPU kernel reads %d", describe(n), len(n.Inputs), len(want))
	}
	for i, id := range n.Inputs {
		if placed && backends.Imported(g, n, name) {
			break // its type is its input's, and checked above
		}
		if err := checkOperand(g.Nodes[id], want[i]); err != nil {
			return fmt.Errorf("%s: operand %d: %w", describe(n), i, err)
		}
	}
	for key, lo := range intAttrs[n.Op] {
		v := n.Attrs[key]
		if v != math.Trunc(v) || v < float64(lo) || v > maxAttr {
			return fmt.Errorf("%s: attribute %s = %v must be a whole number in [%d, %d]", describe(n), key, v, lo, maxAttr)
		}
	}
	switch n.Op {
	case ops.Attention:
		// Attention stores and attends to every token of the batch.
		for i, id := range n.Inputs[:3] {
			if s := g.Nodes[id].Type.Shape[0]; s != graph.Tokens {
				return fmt.Errorf("%s: operand %d has %s rows, attention needs one per token (T)", describe(n), i, s)
			}
		}
	case ops.Part:
		if p := g.Nodes[n.Inputs[0]]; isView(p) {
			return fmt.Errorf("%s: a part of part %s", describe(n), describe(p))
		}
	}
	for _, id := range ops.MatMulWeights(n) {
		w := g.Nodes[id]
		if _, err := w.Type.DType.RowBytes(uint64(w.Type.Shape[1].N)); err != nil {
			return fmt.Errorf("%s: weight %q: %w", describe(n), w.Tensor, err)
		}
		if _, err := quant.VecDotType(w.Type.DType).RowBytes(uint64(w.Type.Shape[1].N)); err != nil {
			return fmt.Errorf("%s: weight %q: %w", describe(n), w.Tensor, err)
		}
	}
	return nil
}

// checkShape bounds every dimension: one or two, the outer one possibly
// the symbol T or R, the rest constants in [1, maxDim].
func checkShape(n *graph.Node) error {
	sh := n.Type.Shape
	if len(sh) == 0 || len(sh) > 2 {
		return fmt.Errorf("%s: shape %s: the CPU backend runs values of one or two dimensions", describe(n), sh)
	}
	for i, d := range sh {
		switch {
		case d.IsSym() && (i > 0 || d.N != 0 || (d != graph.Tokens && d != graph.Rows)):
			return fmt.Errorf("%s: shape %s: only the outer dimension may be symbolic, T or R", describe(n), sh)
		case !d.IsSym() && (d.N < 1 || d.N > maxDim):
			return fmt.Errorf("%s: shape %s: dimension %d must be in [1, %d]", describe(n), sh, d.N, maxDim)
		}
	}
	return nil
}

func checkOperand(src *graph.Node, want operand) error {
	// A model's graph inputs are all indices (checkGraph); a graph of the
	// user's own may feed F32 rows too (checkGeneral).
	input := src.Op == "Input"
	act := computed(src) || input && src.Type.DType == graph.F32
	row := src.Op == "Weight" && src.Type.DType == graph.F32 && len(src.Type.Shape) == 1
	ok := false
	switch want {
	case opAct:
		ok = act
	case opRow:
		ok = row
	case opActOrRow:
		ok = act || row
	case opMat:
		ok = src.Op == "Weight" && len(src.Type.Shape) == 2
	case opIDs:
		ok = input && src.Type.DType == graph.I32
	case opAny:
		ok = act || src.Op == "Weight" || input && src.Type.DType == graph.I32
	}
	if !ok {
		return fmt.Errorf("%s is %s, want %s", describe(src), src.Type, want)
	}
	return nil
}
