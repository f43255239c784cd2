package runtime

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// Taps let a program see intermediate values while a model runs: the tool
// for finding where two backends or two builds of a model first differ
// (graphrun --dump-tensors, graphc tensordiff). Options.Taps chooses the
// nodes when the model is opened, because a device backend has to be
// told: the values of tapped nodes placed on a GPU are copied to the host
// after each step (through the split mechanism, backends.LoadSplits),
// which slows it. SessionOptions.Tap then receives them; on the CPU a
// session without Tap pays nothing for them.

// TapInfo says which value a tap sees.
type TapInfo struct {
	Node    int    // the node's ID in the plan's graph (Model.Plan.Graph)
	Name    string // e.g. "blk.3.ffn_out+l_out"
	Op      string
	Layer   int    // -1 outside the layers
	Backend string // where it was computed
	Step    int    // the session's batches before this one
	Pos     int    // position of the batch's first token
	Rows    int    // rows of the value in this batch (tokens, or output rows)
	Width   int    // values per row
}

// TapFunc receives a tapped node's value, Rows×Width row-major. v is
// valid only during the call. An error stops the batch: the call that
// evaluated it (Eval, Step, Generate) returns it and the session is left
// as it was before that call.
type TapFunc func(t TapInfo, v []float32) error

// MatchNodes returns the matcher of pattern: comma-separated globs in
// path.Match syntax. A glob matches a node by its name, its op, or the
// name of any node a fusion folded into it (so "blk.*.l_out" finds the
// residual stream after the fused "blk.N.ffn_out+l_out"). Graph inputs,
// weights and Copy nodes never match (only computed values are tapped),
// nor do results of several parts (MatMulQKV), which are laid out part by
// part for the largest batch: their Parts (q, k, v) match instead.
func MatchNodes(pattern string) (func(*graph.Node) bool, error) {
	var globs []string
	for _, g := range strings.Split(pattern, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("tap pattern %q: %w", g, err)
		}
		globs = append(globs, g)
	}
	if len(globs) == 0 {
		return nil, fmt.Errorf("empty tap pattern %q: give globs over node names or ops, e.g. \"blk.*.l_out,RMSNorm*\" or \"*\"", pattern)
	}
	return func(n *graph.Node) bool {
		if n.Op == "Input" || n.Op == "Weight" || n.Op == ops.Copy || n.Op == ops.MatMulQKV {
			return false
		}
		for _, g := range globs {
			if ok, _ := path.Match(g, n.Name); ok {
				return true
			}
			if ok, _ := path.Match(g, n.Op); ok {
				return true
			}
			for _, f := range n.Fused {
				if ok, _ := path.Match(g, f); ok {
					return true
				}
			}
		}
		return false
	}, nil
}

// tapPlan is what a Model opened with Options.Taps taps: nodes of the
// graph its program runs, and for each the plan's node it stands for (a
// Copy to the host of a device's value reports as that value).
type tapPlan struct {
	nodes  []int
	report map[int]*graph.Node
}

// tapGraph returns the graph to load on backend name so that the nodes
// pattern matches can be tapped, and what to tap in it: the plan's own
// graph when the host computes them all, else a copy in which each one a
// device computes is also copied to the host in a last split (its memory
// plan dropped: the host's buffers are then laid out at load).
func (p *Plan) tapGraph(name, pattern string) (*graph.Graph, *tapPlan, error) {
	g := p.Graph
	if pattern == "" {
		return g, nil, nil
	}
	match, err := MatchNodes(pattern)
	if err != nil {
		return nil, nil, err
	}
	dev := p.DeviceBackend()
	if name != hostBackend && dev != name {
		return nil, nil, fmt.Errorf("tapping on the %s backend needs a plan placed for it: compile it with --backend %s (or open the .gguf with that backend)", name, name)
	}
	tp := &tapPlan{report: map[int]*graph.Node{}}
	var far []*graph.Node
	for _, n := range g.Nodes {
		if !match(n) {
			continue
		}
		if dev != "" && name != hostBackend && n.Backend != hostBackend {
			far = append(far, n)
			continue
		}
		tp.nodes, tp.report[n.ID] = append(tp.nodes, n.ID), n
	}
	if len(tp.nodes)+len(far) == 0 {
		return nil, nil, fmt.Errorf("tap pattern %q matches no computed node of the plan (see graphc dump)", pattern)
	}
	if len(far) == 0 {
		return g, tp, nil
	}
	c := g.Clone()
	c.Memory = nil
	for _, n := range c.Nodes {
		n.Buffer = nil
	}
	split := graph.Split{Backend: hostBackend}
	for _, src := range far {
		cp := &graph.Node{ID: len(c.Nodes), Op: ops.Copy, Inputs: []int{src.ID}, Type: src.Type, Name: src.Name + "@tap",
			Layer: src.Layer, Backend: hostBackend, Cause: "tap: copy to the host"}
		c.Nodes = append(c.Nodes, cp)
		split.Nodes = append(split.Nodes, cp.ID)
		tp.nodes, tp.report[cp.ID] = append(tp.nodes, cp.ID), src
	}
	c.Splits = append(c.Splits, split)
	if err := c.Verify(); err != nil {
		return nil, nil, fmt.Errorf("tapping: %w", err)
	}
	return c, tp, nil
}

// setTap makes the session's State call fn with the model's tapped
// values.
func (s *Session) setTap(fn TapFunc) error {
	tp := s.m.taps
	if tp == nil {
		return errors.New("SessionOptions.Tap: the model taps no node: open it with Options.Taps")
	}
	t, ok := s.st.(backends.Tapper)
	if !ok {
		return fmt.Errorf("SessionOptions.Tap: the %s backend cannot tap values", s.m.Backend)
	}
	return t.SetTap(tp.nodes, func(node, rows int, v []float32) error {
		n := tp.report[node]
		return fn(TapInfo{Node: n.ID, Name: n.Name, Op: n.Op, Layer: n.Layer, Backend: n.Backend,
			Step: s.batches, Pos: s.tapPos, Rows: rows, Width: int(n.Type.Shape.Inner().N)}, v)
	})
}
