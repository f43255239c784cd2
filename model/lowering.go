package model

import (
	"fmt"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// Lowering is the state of one model's lowering: the graph builder, the
// parameters, the checked tensors and the graph inputs. The building
// blocks (blocks.go) are its methods; like graph.Builder it records the
// first error, so an architecture's Lower reads as straight-line code.
type Lowering struct {
	P Params

	f       *gguf.File
	b       *graph.Builder
	decls   map[string]Tensor // declared and present, shapes checked
	weights map[string]int    // Weight nodes made so far
	layer   int
	err     error

	tokens, pos, rows int // graph inputs
	// ropeFactors names the tensor of RoPE frequency factors every RoPE
	// reads ("": rope_freqs.weight when the file has it).
	ropeFactors string
	// ctx is the context the graph is lowered for (0: unknown, small).
	ctx int
}

func newLowering(f *gguf.File, p Params, decls map[string]Tensor) *Lowering {
	b := graph.NewBuilder()
	l := &Lowering{P: p, f: f, b: b, decls: decls, weights: map[string]int{}, layer: -1}
	l.tokens = b.Input("tokens", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
	l.pos = b.Input("positions", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
	l.rows = b.Input("rows", graph.Type{DType: graph.I32, Shape: graph.S(graph.Rows)})
	return l
}

// Err returns the first error of the lowering or of its builder.
func (l *Lowering) Err() error {
	if l.err != nil {
		return l.err
	}
	return l.b.Err()
}

func (l *Lowering) fail(format string, args ...any) int {
	if l.err == nil {
		l.err = fmt.Errorf(format, args...)
	}
	return -1
}

// SetLayer sets the layer that names and stamps the nodes that follow
// (-1: outside the layers).
func (l *Lowering) SetLayer(il int) {
	l.layer = il
	l.b.SetLayer(il)
}

// Name returns s prefixed with the current layer's "blk.N.", as llama.cpp
// names a layer's tensors and weft names its nodes.
func (l *Lowering) Name(s string) string {
	if l.layer < 0 {
		return s
	}
	return fmt.Sprintf("blk.%d.%s", l.layer, s)
}

// Has reports whether tensor name (see Name) is in the file; only
// declared tensors count.
func (l *Lowering) Has(name string) bool {
	_, ok := l.decls[name]
	return ok
}

// W returns the Weight node of the declared tensor name, made on first use.
func (l *Lowering) W(name string) int {
	if id, ok := l.weights[name]; ok {
		return id
	}
	d, ok := l.decls[name]
	if !ok {
		return l.fail("the lowering reads tensor %q, which is absent or was not declared", name)
	}
	t, _ := l.f.Tensor(name)
	shape := make(graph.Shape, len(d.Shape))
	for i, n := range d.Shape {
		shape[i] = graph.D(int64(n))
	}
	id := l.b.Weight(name, graph.Type{DType: t.Type, Shape: shape})
	l.weights[name] = id
	return id
}

// view returns the Weight node of rows [from, from+n) of the declared
// tensor name (elements, for a vector): see gguf.ViewName.
func (l *Lowering) view(name string, from, n int) int {
	d, ok := l.decls[name]
	if !ok {
		return l.fail("the lowering reads tensor %q, which is absent or was not declared", name)
	}
	vname := gguf.ViewName(name, from, from+n)
	if id, ok := l.weights[vname]; ok {
		return id
	}
	t, ok := l.f.Tensor(vname)
	if !ok {
		return l.fail("tensor %q has no rows [%d, %d)", name, from, from+n)
	}
	shape := make(graph.Shape, len(d.Shape))
	for i, n := range d.Shape {
		shape[i] = graph.D(int64(n))
	}
	shape[0] = graph.D(int64(n))
	id := l.b.Weight(vname, graph.Type{DType: t.Type, Shape: shape})
	l.weights[vname] = id
	return id
}

// Op appends an op node named name (not prefixed: see Name).
func (l *Lowering) Op(op, name string, attrs graph.Attrs, inputs ...int) int {
	for _, in := range inputs {
		if in < 0 {
			return -1 // an error is recorded already
		}
	}
	return l.b.Op(op, name, attrs, inputs...)
}

// Add is the element-wise sum a+b named Name(name): residual connections.
func (l *Lowering) Add(a, b int, name string) int { return l.Op(ops.Add, l.Name(name), nil, a, b) }
