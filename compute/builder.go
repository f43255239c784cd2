package compute

import (
	"errors"
	"fmt"
	"math"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
)

// Value is a node of the graph under construction. The zero Value is no
// node: an op given one fails (and records the error).
type Value struct {
	id int // node ID + 1
	b  *Builder
}

// Builder builds a graph. It records the first error and turns later
// calls into no-ops, so a graph reads as straight-line code checked once
// (Err, or Compile).
type Builder struct {
	gb      *graph.Builder
	err     error
	weights weightSet
	names   map[string]string // value names taken, and by what
}

// NewBuilder starts an empty graph.
func NewBuilder() *Builder {
	return &Builder{gb: graph.NewBuilder(), weights: weightSet{}, names: map[string]string{}}
}

// Err returns the first error recorded.
func (b *Builder) Err() error {
	if b.err != nil {
		return b.err
	}
	return b.gb.Err()
}

func (b *Builder) fail(format string, args ...any) Value {
	if b.Err() == nil {
		b.err = fmt.Errorf(format, args...)
	}
	return Value{}
}

func (b *Builder) value(id int) Value {
	if id < 0 || b.Err() != nil {
		return Value{}
	}
	return Value{id: id + 1, b: b}
}

// claim reserves a name for a value of kind what.
func (b *Builder) claim(name, what string) bool {
	switch prev, dup := b.names[name]; {
	case name == "":
		b.fail("%s without a name", what)
		return false
	case dup:
		b.fail("%s %q: the name is taken by %s", what, name, prev)
		return false
	}
	b.names[name] = what
	return true
}

// Input declares an F32 input of width values per row.
func (b *Builder) Input(name string, width int) Value {
	if b.Err() != nil || !b.claim(name, "input") {
		return Value{}
	}
	if width < 1 || width > math.MaxInt32 {
		return b.fail("input %q: width %d, want 1 or more", name, width)
	}
	return b.value(b.gb.Input(name, graph.Type{DType: graph.F32, Shape: graph.Shape{graph.Tokens, graph.D(int64(width))}}))
}

// InputIDs declares an input of one I32 index per row (embedding
// lookups: GetRows; row selection: SelectRows).
func (b *Builder) InputIDs(name string) Value {
	if b.Err() != nil || !b.claim(name, "input") {
		return Value{}
	}
	return b.value(b.gb.Input(name, graph.Type{DType: graph.I32, Shape: graph.Shape{graph.Tokens}}))
}

// Const declares a constant F32 weight holding data: a vector (one
// dimension) or a matrix of shape[0] rows of shape[1] values. data is
// copied.
func (b *Builder) Const(name string, data []float32, shape ...int) Value {
	if b.Err() != nil {
		return Value{}
	}
	n := 1
	for _, d := range shape {
		if d < 1 {
			return b.fail("constant %q: shape %v, want dimensions of 1 or more", name, shape)
		}
		n *= d
	}
	if len(shape) != 1 && len(shape) != 2 {
		return b.fail("constant %q: shape %v, want a vector or a matrix", name, shape)
	}
	if len(data) != n {
		return b.fail("constant %q: %d values for shape %v (%d)", name, len(data), shape, n)
	}
	raw := make([]byte, 4*len(data))
	for i, x := range data {
		u := math.Float32bits(x)
		raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b.Weight(name, gguf.TypeF32, raw, shape...)
}

// Weight declares a constant weight of any GGUF type from its raw bytes
// (as a GGUF file stores them: quantized blocks, binary16, …); shape is
// outermost first. data is not copied: keep it unchanged while the
// program lives.
func (b *Builder) Weight(name string, dtype gguf.TensorType, data []byte, shape ...int) Value {
	if b.Err() != nil || !b.claim(name, "weight") {
		return Value{}
	}
	sh := make(graph.Shape, len(shape))
	dims := make([]uint64, len(shape))
	for i, d := range shape {
		if d < 1 {
			return b.fail("weight %q: shape %v, want dimensions of 1 or more", name, shape)
		}
		sh[i], dims[len(shape)-1-i] = graph.D(int64(d)), uint64(d)
	}
	size, err := gguf.TensorBytes(dtype, dims)
	if err != nil {
		return b.fail("weight %q: %w", name, err)
	}
	if uint64(len(data)) != size {
		return b.fail("weight %q: %d bytes, a %s %v takes %d", name, len(data), dtype, shape, size)
	}
	b.weights[name] = &tensor{info: gguf.TensorInfo{Name: name, Dims: dims, Type: dtype, Size: size}, data: data}
	return b.value(b.gb.Weight(name, graph.Type{DType: dtype, Shape: sh}))
}

// FileWeight declares the weight tensor of f called tensor; f must stay
// open while the program lives.
func (b *Builder) FileWeight(f *gguf.File, tensor string) Value {
	if b.Err() != nil {
		return Value{}
	}
	if f == nil {
		return b.fail("weight %q: no file", tensor)
	}
	t, ok := f.Tensor(tensor)
	if !ok {
		return b.fail("weight %q is not in %s", tensor, f.Path())
	}
	shape := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		if d > math.MaxInt32 {
			return b.fail("weight %q: dimension %d is too large", tensor, d)
		}
		shape[len(t.Dims)-1-i] = int(d)
	}
	return b.Weight(tensor, t.Type, f.TensorData(t), shape...)
}

// Op appends a node of op (a built-in of package ops, or one registered
// with ops.Register) reading in; its type is inferred, and a mismatch is
// recorded as the Builder's error.
func (b *Builder) Op(op string, attrs graph.Attrs, in ...Value) Value {
	return b.NamedOp(op, "", attrs, in...)
}

// NamedOp is Op with a node name (shown by dumps and taps; "" names it
// after its op and ID).
func (b *Builder) NamedOp(op, name string, attrs graph.Attrs, in ...Value) Value {
	if b.Err() != nil {
		return Value{}
	}
	ids := make([]int, len(in))
	for i, v := range in {
		if v.b != b || v.id == 0 {
			return b.fail("%s %q: operand %d is not a value of this builder", op, name, i)
		}
		ids[i] = v.id - 1
	}
	if name == "" {
		name = fmt.Sprintf("%s.%d", op, len(b.names))
	}
	if !b.claim(name, "node") {
		return Value{}
	}
	return b.value(b.gb.Op(op, name, attrs, ids...))
}

// Output names v as a graph output.
func (b *Builder) Output(name string, v Value) {
	if b.Err() != nil {
		return
	}
	if v.b != b || v.id == 0 {
		b.fail("output %q is not a value of this builder", name)
		return
	}
	if _, dup := b.outputs()[name]; dup {
		b.fail("output %q declared twice", name)
		return
	}
	b.gb.Output(name, v.id-1)
}

func (b *Builder) outputs() map[string]int {
	g, _ := b.gb.Graph()
	return g.Outputs
}

// Type returns v's element type and shape ("T" is the rows of a step).
func (v Value) Type() (graph.Type, error) {
	if v.b == nil || v.id == 0 {
		return graph.Type{}, errors.New("not a value")
	}
	g, _ := v.b.gb.Graph()
	return g.Nodes[v.id-1].Type, nil
}
