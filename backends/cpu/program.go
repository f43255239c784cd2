package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/quant"
)

// WeightSource supplies the bytes of a weight tensor by GGUF name.
type WeightSource interface {
	Tensor(name string) (*gguf.TensorInfo, bool)
	TensorData(t *gguf.TensorInfo) []byte
}

// Options configure compilation.
type Options struct {
	MaxTokens int // largest batch (tokens per Run); default 512
	Threads   int // goroutines for parallel kernels; default GOMAXPROCS
}

// Backend is the CPU backend's description for placement.
type Backend struct{}

// Name returns "cpu".
func (Backend) Name() string { return "cpu" }

// Supports reports whether the CPU backend has a kernel for n.
func (Backend) Supports(n *graph.Node, _ *graph.Graph) bool {
	_, ok := kernels[n.Op]
	return ok || n.Op == "Input" || n.Op == "Weight"
}

// value is a compiled node: where its data lives and how to compute it.
type value struct {
	node  *graph.Node
	slot  int       // activation buffer slot, -1 for none
	width int       // elements per row (innermost dimension)
	raw   []byte    // Weight: tensor bytes
	vec   []float32 // Weight: F32 vectors, decoded once
	kv    int       // Attention: index of its KV cache pair
	run   kernel
}

// Program is a compiled graph, immutable once built.
type Program struct {
	g         *graph.Graph
	order     []int
	vals      []value
	slotSize  []int // elements per slot
	maxTokens int
	threads   int
	attention []int // Attention node IDs, in KV index order
	actBytes  int   // largest activation-quantization scratch of any MatMul
	logits    int   // output node ID
}

// Compile prepares g for execution with weights from w.
func Compile(g *graph.Graph, w WeightSource, o Options) (*Program, error) {
	if o.MaxTokens <= 0 {
		o.MaxTokens = 512
	}
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if err := g.Verify(); err != nil {
		return nil, err
	}
	order, err := g.TopoOrder()
	if err != nil {
		return nil, err
	}
	out, ok := g.Outputs["logits"]
	if !ok {
		return nil, fmt.Errorf("graph has no \"logits\" output")
	}
	p := &Program{g: g, order: order, vals: make([]value, len(g.Nodes)), maxTokens: o.MaxTokens, threads: o.Threads, logits: out}
	for _, id := range order {
		if err := p.compileNode(g.Nodes[id], w); err != nil {
			return nil, err
		}
	}
	p.assignSlots()
	return p, nil
}

func (p *Program) compileNode(n *graph.Node, w WeightSource) error {
	v := &p.vals[n.ID]
	*v = value{node: n, slot: -1, width: int(n.Type.Shape.Inner().N), kv: -1}
	switch n.Op {
	case "Input":
		return nil
	case "Weight":
		return p.bindWeight(v, w)
	}
	k, ok := kernels[n.Op]
	if !ok {
		return fmt.Errorf("node %d (%s %q): no CPU kernel for op %s", n.ID, n.Op, n.Name, n.Op)
	}
	v.run = k
	if n.Op == ops.Attention {
		v.kv = len(p.attention)
		p.attention = append(p.attention, n.ID)
	}
	if n.Op == ops.MatMul {
		wt := p.g.Nodes[n.Inputs[1]].Type
		cols := uint64(wt.Shape[1].N)
		rb, err := quant.VecDotType(wt.DType).RowBytes(cols)
		if err != nil {
			return fmt.Errorf("node %d (%s %q): %w", n.ID, n.Op, n.Name, err)
		}
		p.actBytes = max(p.actBytes, int(rb)*p.maxTokens)
	}
	return nil
}

func (p *Program) bindWeight(v *value, w WeightSource) error {
	n := v.node
	t, ok := w.Tensor(n.Tensor)
	if !ok {
		return fmt.Errorf("weight %q is not in the model file", n.Tensor)
	}
	if t.Type != n.Type.DType {
		return fmt.Errorf("weight %q has type %s in the file, %s in the graph", n.Tensor, t.Type, n.Type.DType)
	}
	if !quant.Supported(t.Type) {
		return quant.UnsupportedError(n.Tensor, t.Type)
	}
	v.raw = w.TensorData(t)
	if len(n.Type.Shape) == 1 && t.Type == gguf.TypeF32 {
		v.vec = make([]float32, len(v.raw)/4)
		for i := range v.vec {
			v.vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(v.raw[4*i:]))
		}
	}
	return nil
}

// assignSlots gives every computed F32 value a buffer slot, reusing a slot
// once all readers of its previous value have run. Sizes are for the
// largest batch.
func (p *Program) assignSlots() {
	lastUse := make([]int, len(p.vals))
	for step, id := range p.order {
		for _, in := range p.g.Nodes[id].Inputs {
			lastUse[in] = step
		}
	}
	lastUse[p.logits] = len(p.order)
	var free []int
	for step, id := range p.order {
		v := &p.vals[id]
		if v.run != nil {
			need := int(v.node.Type.Shape.PerRow()) * p.maxTokens
			v.slot = p.takeSlot(&free, need)
		}
		for _, in := range p.g.Nodes[id].Inputs {
			if lastUse[in] == step && p.vals[in].slot >= 0 && !p.stillFree(free, p.vals[in].slot) {
				free = append(free, p.vals[in].slot)
			}
		}
	}
}

func (p *Program) stillFree(free []int, s int) bool {
	for _, f := range free {
		if f == s {
			return true
		}
	}
	return false
}

// takeSlot picks the smallest free slot of at least need elements, growing
// the largest free slot or making a new one otherwise.
func (p *Program) takeSlot(free *[]int, need int) int {
	best := -1
	for i, s := range *free {
		if p.slotSize[s] >= need && (best < 0 || p.slotSize[s] < p.slotSize[(*free)[best]]) {
			best = i
		}
	}
	if best < 0 && len(*free) > 0 {
		best = 0
		for i, s := range *free {
			if p.slotSize[s] > p.slotSize[(*free)[best]] {
				best = i
			}
		}
		p.slotSize[(*free)[best]] = need
	}
	if best < 0 {
		p.slotSize = append(p.slotSize, need)
		return len(p.slotSize) - 1
	}
	s := (*free)[best]
	*free = append((*free)[:best], (*free)[best+1:]...)
	return s
}

// ActivationBytes is the memory one State needs for activations.
func (p *Program) ActivationBytes() int64 {
	var n int64
	for _, s := range p.slotSize {
		n += int64(s) * 4
	}
	return n
}

// MaxTokens is the largest batch Run accepts.
func (p *Program) MaxTokens() int { return p.maxTokens }

// Graph returns the compiled graph.
func (p *Program) Graph() *graph.Graph { return p.g }
