package cpu

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/safemath"
	"github.com/weft-ml/weft/ops"
)

// Graphs of the user's own (Options.General; package compute builds them)
// run on the same kernels as model lowerings, with the same form: every
// computed value F32 [T, width], T the rows of the step. What differs is
// around them: any named inputs, F32 [T, width] or I32 indices [T], bound
// by RunGraph from Go slices, and any named outputs, read with Output.
// There is no KV cache, so no Attention, and no output rows (R).

// checkGeneral is checkGraph for a graph of the user's own.
func checkGeneral(g *graph.Graph, placed bool) error {
	if placed {
		return fmt.Errorf("a graph of your own runs on the CPU alone")
	}
	if len(g.Outputs) == 0 {
		return fmt.Errorf("the graph has no outputs")
	}
	bound := map[int]string{}
	for name, id := range g.Inputs {
		n := g.Node(id)
		if n == nil || n.Op != "Input" {
			return fmt.Errorf("graph input %q refers to node %d, which is not an Input node", name, id)
		}
		if other, dup := bound[id]; dup {
			return fmt.Errorf("graph inputs %q and %q are the same node %d", other, name, id)
		}
		sh := n.Type.Shape
		ids := n.Type.DType == graph.I32 && len(sh) == 1
		rows := n.Type.DType == graph.F32 && len(sh) == 2
		if !(ids || rows) || sh[0] != graph.Tokens {
			return fmt.Errorf("graph input %q (node %d) has type %s: want F32 [T, width] or I32 [T]", name, id, n.Type)
		}
		bound[id] = name
	}
	for _, n := range g.Nodes {
		if n.Op == ops.Attention {
			return fmt.Errorf("%s: attention needs a model's KV cache, which a graph of your own has not", describe(n))
		}
		for _, d := range n.Type.Shape {
			if d.IsSym() && d != graph.Tokens {
				return fmt.Errorf("%s: shape %s: a graph of your own has one symbolic dimension, T", describe(n), n.Type.Shape)
			}
		}
		if err := checkNode(g, n, bound, false); err != nil {
			return err
		}
	}
	for name, id := range g.Outputs {
		if n := g.Node(id); n == nil || !computed(n) {
			return fmt.Errorf("graph output %q is node %d, which is not a computed value", name, id)
		}
	}
	return nil
}

// fedInput is the kernel of an F32 graph input: RunGraph wrote its rows
// into its buffer already.
func fedInput(*State, *value) error { return nil }

// compileInput gives an F32 input of a graph of the user's own a buffer
// (inputSlots); I32 inputs are read from the caller's slice.
func (p *Program) compileInput(v *value) error {
	if !p.general || v.node.Type.DType != graph.F32 {
		return nil
	}
	var ok bool
	if v.elems, ok = maxElems(v.node.Type, p.maxTokens); !ok {
		return fmt.Errorf("%s: %s for a batch of %d rows does not fit in memory: use a smaller batch", describe(v.node), v.node.Type, p.maxTokens)
	}
	v.run = fedInput
	return nil
}

// inputSlots lays the F32 inputs' buffers after the planned arena: the
// memory plan leaves graph inputs out (a model's are indices, read in
// place).
func (p *Program) inputSlots() error {
	for _, id := range p.order {
		v := &p.vals[id]
		if v.node.Op != "Input" || v.run == nil {
			continue
		}
		end, ok := safemath.Add(int64(p.arenaLen), int64(v.elems))
		if !ok || end > math.MaxInt/4 {
			return fmt.Errorf("the activations for a batch of %d rows do not fit in memory: use a smaller batch", p.maxTokens)
		}
		v.slot = len(p.slots)
		p.slots = append(p.slots, slot{off: p.arenaLen, size: v.elems, parent: -1})
		p.arenaLen = int(end)
	}
	return nil
}

// RunGraph runs a graph compiled with Options.General for one step of
// rows rows: f32 holds every F32 input's rows×width values, i32 every I32
// input's rows indices, by input name. Read the results with Output. A
// kernel's panic is returned as an error and breaks the State, as in Run
// (a custom kernel's panic is that step's error only: see custom.go).
func (s *State) RunGraph(rows int, f32 map[string][]float32, i32 map[string][]int32) error {
	if s.broken != nil {
		return s.broken
	}
	p := s.p
	if !p.general {
		return fmt.Errorf("this program runs a model: run it with Run")
	}
	if rows < 1 || rows > p.maxTokens {
		return fmt.Errorf("%d rows: want 1 to %d (the compiled maximum)", rows, p.maxTokens)
	}
	for name := range f32 {
		if id, ok := p.g.Inputs[name]; !ok || p.g.Nodes[id].Type.DType != graph.F32 {
			return fmt.Errorf("no F32 input %q (inputs: %v)", name, p.inputNames())
		}
	}
	for name := range i32 {
		if id, ok := p.g.Inputs[name]; !ok || p.g.Nodes[id].Type.DType != graph.I32 {
			return fmt.Errorf("no I32 input %q (inputs: %v)", name, p.inputNames())
		}
	}
	s.rowsT, s.rowsR = rows, 0
	for name, id := range p.g.Inputs {
		v := &p.vals[id]
		if v.node.Type.DType == graph.I32 {
			ids, ok := i32[name]
			if !ok || len(ids) != rows {
				return fmt.Errorf("input %q: %d indices, want one per row (%d)", name, len(ids), rows)
			}
			s.ints[id] = ids
			continue
		}
		x, ok := f32[name]
		if !ok || len(x) != rows*v.width {
			return fmt.Errorf("input %q: %d values, want %d rows of %d", name, len(x), rows, v.width)
		}
		if v.slot >= 0 { // an input no node reads has no buffer
			copy(s.slots[v.slot], x)
		}
	}
	return s.exec(p.order)
}

// Output returns output name's values of the last RunGraph, rows×width;
// the slice is the State's until the next run.
func (s *State) Output(name string) ([]float32, error) {
	id, ok := s.p.g.Outputs[name]
	if !ok {
		outs := make([]string, 0, len(s.p.g.Outputs))
		for n := range s.p.g.Outputs {
			outs = append(outs, n)
		}
		sort.Strings(outs)
		return nil, fmt.Errorf("no output %q (outputs: %v)", name, outs)
	}
	return slices.Clip(s.f32(&s.p.vals[id])), nil
}

func (p *Program) inputNames() []string {
	names := make([]string, 0, len(p.g.Inputs))
	for n := range p.g.Inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
