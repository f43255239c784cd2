package graph

import (
	"fmt"
	"math"
)

// Attrs are an op's parameters. Numbers only, so plans round-trip exactly
// through JSON; integers are stored as float64 and read back with Int.
type Attrs map[string]float64

// Int returns attribute key as an int (0 when absent).
func (a Attrs) Int(key string) int { return int(a[key]) }

// Float returns attribute key as a float32.
func (a Attrs) Float(key string) float32 { return float32(a[key]) }

// Bool returns attribute key as a bool (non-zero is true).
func (a Attrs) Bool(key string) bool { return a[key] != 0 }

// Node is one operation. Inputs are node IDs in operand order; the same ID
// may appear twice (Mul(x, x)).
type Node struct {
	ID     int    `json:"id"`
	Op     string `json:"op"`
	Inputs []int  `json:"inputs,omitempty"`
	Type   Type   `json:"type"`
	Attrs  Attrs  `json:"attrs,omitempty"`
	Name   string `json:"name,omitempty"`   // human-readable, e.g. "blk.3.attn_q"
	Layer  int    `json:"layer"`            // transformer layer, -1 outside layers
	Tensor string `json:"tensor,omitempty"` // Weight nodes: the GGUF tensor they read

	Backend string `json:"backend,omitempty"` // placement, filled by passes
	Cause   string `json:"cause,omitempty"`   // why this placement or fusion

	Fused  []string `json:"fused,omitempty"`  // names of the nodes a fused node replaced
	Buffer *Buffer  `json:"buffer,omitempty"` // arena slice, filled by memory planning
	Layout *Layout  `json:"layout,omitempty"` // Weight nodes: a backend-preferred repacking
}

// Buffer is a node's slice of its backend's activation arena, in bytes,
// sized for Graph.Memory.Tokens tokens. View marks a buffer that lies inside
// another node's buffer (a part of a multi-part result).
type Buffer struct {
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
	View   bool  `json:"view,omitempty"`
}

// Layout names the repacked form of a weight chosen at compile time and,
// once repacked, where its bytes lie in the plan's side file.
type Layout struct {
	Name   string `json:"name"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
}

// Memory is the outcome of memory planning: the batch size buffers were
// sized for, each backend's arena size and the naive sum of all buffers.
type Memory struct {
	Tokens int              `json:"tokens"`
	Arenas map[string]int64 `json:"arenas"`
	Naive  int64            `json:"naive"`
}

// Split is a maximal run of nodes, in execution order, on one backend.
type Split struct {
	Backend string `json:"backend"`
	Nodes   []int  `json:"nodes"`
}

// Graph is a list of nodes in insertion order (which is topological for
// graphs made by Builder) plus named inputs and outputs.
type Graph struct {
	Nodes   []*Node        `json:"nodes"`
	Inputs  map[string]int `json:"inputs"`  // name -> Input node ID
	Outputs map[string]int `json:"outputs"` // name -> node ID

	Memory *Memory `json:"memory,omitempty"` // filled by memory planning
	Splits []Split `json:"splits,omitempty"` // filled by placement
}

// Node returns the node with the given ID, or nil.
func (g *Graph) Node(id int) *Node {
	if id < 0 || id >= len(g.Nodes) {
		return nil
	}
	return g.Nodes[id]
}

// Builder appends nodes to a graph, inferring each node's type. It records
// the first error and turns later calls into no-ops, so a lowering reads as
// straight-line code and checks Err once.
type Builder struct {
	g     *Graph
	err   error
	layer int
}

// NewBuilder starts an empty graph.
func NewBuilder() *Builder {
	return &Builder{g: &Graph{Inputs: map[string]int{}, Outputs: map[string]int{}}, layer: -1}
}

// SetLayer sets the layer index stamped on subsequent nodes (-1 for none).
func (b *Builder) SetLayer(l int) { b.layer = l }

// Err returns the first error recorded.
func (b *Builder) Err() error { return b.err }

// Graph returns the graph and the first error, if any.
func (b *Builder) Graph() (*Graph, error) { return b.g, b.err }

// Input declares a named graph input.
func (b *Builder) Input(name string, t Type) int {
	id := b.add(&Node{Op: "Input", Type: t, Name: name})
	if id >= 0 {
		b.g.Inputs[name] = id
	}
	return id
}

// Weight declares a constant read from the GGUF tensor called tensor.
func (b *Builder) Weight(tensor string, t Type) int {
	return b.add(&Node{Op: "Weight", Type: t, Name: tensor, Tensor: tensor})
}

// Output names a node as a graph output.
func (b *Builder) Output(name string, id int) {
	if b.err == nil {
		b.g.Outputs[name] = id
	}
}

// Op appends an op node; its type comes from the op's registered inference.
func (b *Builder) Op(op, name string, attrs Attrs, inputs ...int) int {
	if b.err != nil {
		return -1
	}
	n := &Node{Op: op, Inputs: inputs, Attrs: attrs, Name: name}
	t, err := b.infer(n)
	if err != nil {
		b.err = fmt.Errorf("%s %q (layer %d): %w", op, name, b.layer, err)
		return -1
	}
	n.Type = t
	return b.add(n)
}

func (b *Builder) infer(n *Node) (Type, error) {
	def, ok := Lookup(n.Op)
	if !ok {
		return Type{}, fmt.Errorf("unknown op")
	}
	in := make([]Type, len(n.Inputs))
	for i, id := range n.Inputs {
		src := b.g.Node(id)
		if src == nil {
			return Type{}, fmt.Errorf("input %d refers to missing node %d", i, id)
		}
		in[i] = src.Type
	}
	if def.Arity >= 0 && len(in) != def.Arity {
		return Type{}, fmt.Errorf("takes %d inputs, got %d", def.Arity, len(in))
	}
	return def.Infer(in, n.Attrs)
}

func (b *Builder) add(n *Node) int {
	if b.err != nil {
		return -1
	}
	for k, v := range n.Attrs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.err = fmt.Errorf("%s %q: attribute %s is %v", n.Op, n.Name, k, v)
			return -1
		}
	}
	n.ID = len(b.g.Nodes)
	n.Layer = b.layer
	b.g.Nodes = append(b.g.Nodes, n)
	return n.ID
}
