package cpu

import (
	"fmt"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

func init() { backends.Register(Backend{}) }

// name is the CPU backend's name, as placement records it.
const name = "cpu"

// Backend is the CPU backend as the compiler and runtime see it: what it
// supports, its weight layouts (layout.go) and Load.
type Backend struct{}

// Name returns "cpu".
func (Backend) Name() string { return name }

// Supports accepts every node the CPU backend has a kernel for.
func (Backend) Supports(n *graph.Node, g *graph.Graph) error {
	if n.Op == "Input" || n.Op == "Weight" {
		return nil
	}
	if _, ok := kernels[n.Op]; !ok && !isCustom(n.Op) {
		return fmt.Errorf("no CPU kernel for %s", n.Op)
	}
	if n.Op == ops.Mul || n.Op == ops.Add {
		for _, in := range n.Inputs {
			if w := g.Nodes[in]; w.Op == "Weight" && len(w.Type.Shape) != 1 {
				return fmt.Errorf("the CPU's %s takes a weight operand only as a 1-D row, not %s", n.Op, w.Type.Shape)
			}
		}
	}
	return nil
}

// Load compiles g for the CPU (see Compile).
func (Backend) Load(g *graph.Graph, w backends.Weights, o backends.LoadOptions) (backends.Program, error) {
	if o.Device != 0 {
		return nil, fmt.Errorf("the cpu backend has one device, not device %d", o.Device)
	}
	p, err := Compile(g, w, Options{MaxTokens: o.MaxTokens, Threads: o.Threads, Packed: o.Packed, ModelFile: o.ModelFile, PackedFile: o.PackedFile, Placed: o.Placed, F16AsBF16: o.F16AsBF16})
	if err != nil {
		return nil, err
	}
	return loaded{p}, nil
}

// loaded adapts a Program to the backends contract.
type loaded struct{ *Program }

func (l loaded) NewState(o backends.StateOptions) (backends.State, error) {
	st, err := l.Program.NewStateWith(backends.StateOptions{Ctx: o.Ctx, Seqs: o.NumSeqs(), KVType: o.KVType, FlashAttn: o.FlashAttn, FlashF32Acc: o.FlashF32Acc})
	if err != nil {
		return nil, err
	}
	return session{st}, nil
}

// session adapts a State to the backends contract.
type session struct{ *State }

func (s session) Run(b backends.Batch) ([]float32, error) {
	return s.State.RunBatch(b)
}

func (s session) RunSplit(i int, b backends.Batch, x *backends.Exchange) ([]float32, error) {
	return s.State.RunSplitBatch(i, b, x)
}
