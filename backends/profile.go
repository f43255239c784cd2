package backends

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-ml/weft/graph"
)

// Profiler is an optional State capability: the time each node of the
// graph takes. StartProfile turns timing on for every later Run (or
// RunSplit) and clears what was measured; Profile returns the sums since
// then, one entry per batch size. The CPU measures wall time around each
// node's kernel (its worker pool included), the Vulkan backend device
// time between GPU timestamps.
type Profiler interface {
	StartProfile() error
	Profile() []StepProfile
}

// StepProfile sums the steps (batches) of one size.
type StepProfile struct {
	Tokens int // tokens in each batch
	// Steps is how many batches of Tokens tokens ran. Dispatches,
	// Barriers and Submits are totals over them (0 on the CPU).
	Steps                         int
	Dispatches, Barriers, Submits int
	Clock                         string // "gpu" (device timestamps) or "wall"
	Spans                         []Span // in execution order of their first appearance
}

// Span is the time of one labelled part of a node, summed over steps: a
// node's kernel, or one of the dispatches a backend records for it (the
// activations' quantization before a matmul, the KV store of an
// attention).
type Span struct {
	Node  int    // graph node ID
	Label string // the op, for matmuls with the weight's type and shape
	Count int    // how many times it ran
	Time  time.Duration
}

// StartProfile starts every backend's profile (each must have one).
func (s *splitState) StartProfile() error {
	for _, name := range s.names {
		p, ok := s.states[name].(Profiler)
		if !ok {
			return errors.New("backend " + name + " has no per-node profile")
		}
		if err := p.StartProfile(); err != nil {
			return err
		}
	}
	s.profSteps = map[int]int{}
	return nil
}

// Profile merges the backends' profiles; a step is one Run of every
// split, however many of them a backend runs.
func (s *splitState) Profile() []StepProfile {
	if s.profSteps == nil {
		return nil
	}
	var out []StepProfile
	for _, name := range s.names {
		for _, sp := range s.states[name].(Profiler).Profile() {
			i := slices.IndexFunc(out, func(o StepProfile) bool { return o.Tokens == sp.Tokens })
			if i < 0 {
				out = append(out, StepProfile{Tokens: sp.Tokens, Clock: sp.Clock})
				i = len(out) - 1
			}
			o := &out[i]
			o.Dispatches += sp.Dispatches
			o.Barriers += sp.Barriers
			o.Submits += sp.Submits
			if o.Clock != sp.Clock {
				o.Clock = "mixed"
			}
			o.Spans = append(o.Spans, sp.Spans...)
		}
	}
	for i := range out {
		out[i].Steps = s.profSteps[out[i].Tokens]
	}
	slices.SortFunc(out, func(a, b StepProfile) int { return a.Tokens - b.Tokens })
	return out
}

// SpanSet sums spans by node and label, keeping first-seen order.
type SpanSet struct {
	index map[spanKey]int
	Spans []Span
}

type spanKey struct {
	node  int
	label string
}

// Add adds one run of a span.
func (s *SpanSet) Add(node int, label string, d time.Duration) {
	if s.index == nil {
		s.index = map[spanKey]int{}
	}
	k := spanKey{node, label}
	i, ok := s.index[k]
	if !ok {
		i = len(s.Spans)
		s.index[k] = i
		s.Spans = append(s.Spans, Span{Node: node, Label: label})
	}
	s.Spans[i].Count++
	s.Spans[i].Time += d
}

// ProfileLabel names a node in a profile: its op and, for matmuls, the
// first weight's type and shape ("MatMul q4_0 2048x5632"), so that a
// profile summed by label separates the matrices.
func ProfileLabel(g *graph.Graph, n *graph.Node) string {
	if !strings.HasPrefix(n.Op, "MatMul") || len(n.Inputs) < 2 {
		return n.Op
	}
	w := g.Nodes[n.Inputs[1]]
	if len(w.Type.Shape) != 2 {
		return n.Op
	}
	return fmt.Sprintf("%s %s %dx%d", n.Op, w.Type.DType, w.Type.Shape[0].N, w.Type.Shape[1].N)
}
