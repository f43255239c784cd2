package backends

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// A placed graph whose nodes run on more than one backend (an op the GPU
// has no shader for goes to the CPU) is cut by placement into splits:
// runs of nodes in execution order on one backend (graph.Split). Every
// backend loads the nodes placed on it (LoadOptions.Placed); a step runs
// the splits in order, and a value crossing backends travels through host
// memory in an Exchange: its producer puts it there at the end of its
// split, and the Copy node placed on the reader's backend takes it at the
// start of the reader's split.

// SplitState is the State capability of running one split of a placed
// graph (a backend Loaded with LoadOptions.Placed returns States that
// have it).
type SplitState interface {
	State
	// RunSplit evaluates the nodes of split i of the graph for batch b.
	// A Copy whose input another backend computed reads x.Get(input); a
	// value of this split that a Copy on another backend reads is given
	// to x.Put. It returns the logits when the split computes them, else
	// nil.
	RunSplit(i int, b Batch, x *Exchange) ([]float32, error)
}

// Exchange holds the values crossing backends during one step, in host
// memory, as float32 rows ([rows][width] of the value for this batch).
// A slice given to Put stays the producer's: it must stay unchanged
// until every split of the step has run.
type Exchange struct {
	vals map[int][]float32
}

// Put gives node's value for this step.
func (x *Exchange) Put(node int, v []float32) {
	if x.vals == nil {
		x.vals = map[int][]float32{}
	}
	x.vals[node] = v
}

// Get returns node's value for this step; it is an error for it to be
// missing or of another length than the reader expects.
func (x *Exchange) Get(node int, want int) ([]float32, error) {
	v, ok := x.vals[node]
	switch {
	case !ok:
		return nil, fmt.Errorf("the value of node %d was not computed before the split that reads it", node)
	case len(v) != want:
		return nil, fmt.Errorf("the value of node %d has %d elements, its reader expects %d", node, len(v), want)
	}
	return v, nil
}

// reset forgets the previous step's values.
func (x *Exchange) reset() { clear(x.vals) }

// Foreign reports whether n is a computed node that another backend
// than name runs (graph inputs and weights are nobody's: a backend binds
// the weights its own nodes read).
func Foreign(n *graph.Node, name string) bool {
	return n.Op != "Input" && n.Op != "Weight" && n.Backend != "" && n.Backend != name
}

// Imported reports whether n is a Copy on backend name of a value that
// another backend computes: its value comes from the Exchange.
func Imported(g *graph.Graph, n *graph.Node, name string) bool {
	return n.Op == ops.Copy && n.Backend == name && Foreign(g.Nodes[n.Inputs[0]], name)
}

// Exported lists the nodes backend name computes whose values a Copy on
// another backend reads, indexed by node ID.
func Exported(g *graph.Graph, name string) []bool {
	out := make([]bool, len(g.Nodes))
	for _, n := range g.Nodes {
		if n.Op == ops.Copy && Foreign(n, name) {
			if src := g.Nodes[n.Inputs[0]]; src.Backend == name && src.Op != "Input" && src.Op != "Weight" {
				out[src.ID] = true
			}
		}
	}
	return out
}

// SplitOrder is the execution order of a placed graph as one backend
// sees it: graph inputs and weights first (in topological order), then
// every split's nodes in split order. It fails when the splits are not
// a topological order of the computed nodes.
func SplitOrder(g *graph.Graph) ([]int, error) {
	topo, err := g.TopoOrder()
	if err != nil {
		return nil, err
	}
	var order []int
	for _, id := range topo {
		if op := g.Nodes[id].Op; op == "Input" || op == "Weight" {
			order = append(order, id)
		}
	}
	done := make([]bool, len(g.Nodes))
	for _, id := range order {
		done[id] = true
	}
	for i, s := range g.Splits {
		for _, id := range s.Nodes {
			if id < 0 || id >= len(g.Nodes) || done[id] || g.Nodes[id].Backend != s.Backend {
				return nil, fmt.Errorf("split %d (%s): node %d is not a node of that backend placed once", i, s.Backend, id)
			}
			for _, in := range g.Nodes[id].Inputs {
				if !done[in] {
					return nil, fmt.Errorf("split %d (%s): node %d reads node %d before it is computed", i, s.Backend, id, in)
				}
			}
			done[id] = true
			order = append(order, id)
		}
	}
	if len(order) != len(topo) {
		return nil, fmt.Errorf("the splits hold %d of the graph's %d computed nodes", len(order)-(len(topo)-countComputed(g)), countComputed(g))
	}
	return order, nil
}

func countComputed(g *graph.Graph) int {
	n := 0
	for _, nd := range g.Nodes {
		if nd.Op != "Input" && nd.Op != "Weight" {
			n++
		}
	}
	return n
}

// SplitBackends lists the backends of a placed graph's splits in order
// of first appearance; a graph without splits has none.
func SplitBackends(g *graph.Graph) []string {
	var names []string
	for _, s := range g.Splits {
		if !slices.Contains(names, s.Backend) {
			names = append(names, s.Backend)
		}
	}
	return names
}

// LoadSplits loads a graph placed on several backends: each registered
// backend named by a split loads its own nodes (LoadOptions.Placed), and
// the Program's States run the splits in order. o.Device and o.CacheFile
// go to the backends that list devices; o.Packed (the CPU's repacked
// weights) to all.
func LoadSplits(g *graph.Graph, w Weights, o LoadOptions) (Program, error) {
	if _, err := SplitOrder(g); err != nil {
		return nil, fmt.Errorf("plan splits: %w", err)
	}
	sp := &splitProgram{g: g, progs: map[string]Program{}}
	for _, name := range SplitBackends(g) {
		exec, err := Lookup(name)
		if err != nil {
			sp.Close()
			return nil, err
		}
		bo := o
		bo.Placed = true
		if _, lists := exec.(DeviceLister); !lists {
			bo.Device, bo.CacheFile, bo.Progress = 0, "", nil
		}
		p, err := exec.Load(g, w, bo)
		if err != nil {
			sp.Close()
			return nil, fmt.Errorf("backend %s: %w", name, err)
		}
		sp.progs[name], sp.names = p, append(sp.names, name)
	}
	return sp, nil
}

// splitProgram is the Programs of every backend of a placed graph.
type splitProgram struct {
	g     *graph.Graph
	names []string // load order
	progs map[string]Program
}

func (p *splitProgram) MaxTokens() int {
	m := 0
	for i, name := range p.names {
		if t := p.progs[name].MaxTokens(); i == 0 || t < m {
			m = t
		}
	}
	return m
}

// DeviceInfo describes the device of the first split backend that has one
// (the host's backend has none).
func (p *splitProgram) DeviceInfo() DeviceInfo {
	for _, name := range p.names {
		if d, ok := p.progs[name].(DeviceDescriber); ok {
			return d.DeviceInfo()
		}
	}
	return DeviceInfo{}
}

func (p *splitProgram) ActivationBytes() int64 {
	var n int64
	for _, prog := range p.progs {
		n += prog.ActivationBytes()
	}
	return n
}

func (p *splitProgram) NewState(o StateOptions) (State, error) {
	s := &splitState{g: p.g, states: map[string]SplitState{}}
	for _, name := range p.names {
		st, err := p.progs[name].NewState(o)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("backend %s: %w", name, err)
		}
		ss, ok := st.(SplitState)
		if !ok {
			closeAny(st)
			s.Close()
			return nil, fmt.Errorf("backend %s cannot run part of a graph (its State has no RunSplit)", name)
		}
		s.states[name], s.names = ss, append(s.names, name)
	}
	return s, nil
}

// Close releases every backend's Program (in reverse load order).
func (p *splitProgram) Close() error {
	var errs []error
	for i := len(p.names) - 1; i >= 0; i-- {
		errs = append(errs, closeAny(p.progs[p.names[i]]))
	}
	return errors.Join(errs...)
}

// splitState is one session on every backend of a placed graph.
type splitState struct {
	g      *graph.Graph
	names  []string
	states map[string]SplitState
	x      Exchange
	// profSteps counts the steps run per batch size once StartProfile
	// was called (profile.go).
	profSteps map[int]int
}

func (s *splitState) Context() int { return s.states[s.names[0]].Context() }

func (s *splitState) KVBytes() int64 {
	var n int64
	for _, st := range s.states {
		n += st.KVBytes()
	}
	return n
}

// Run runs the splits in order, passing boundary values through the
// Exchange; the logits are the split's that computes them.
func (s *splitState) Run(b Batch) ([]float32, error) {
	s.x.reset()
	var logits []float32
	for i, sp := range s.g.Splits {
		out, err := s.states[sp.Backend].RunSplit(i, b, &s.x)
		if err != nil {
			return nil, fmt.Errorf("split %d (%s): %w", i, sp.Backend, err)
		}
		if out != nil {
			logits = out
		}
	}
	if logits == nil {
		return nil, errors.New("no split computed the logits")
	}
	if s.profSteps != nil {
		s.profSteps[len(b.Tokens)]++
	}
	return logits, nil
}

// CopySeq copies the cells on every backend that holds KV caches of the
// graph (SeqCopier); a backend that cannot fails the copy.
func (s *splitState) CopySeq(dst, src, n int) error {
	for _, name := range s.names {
		c, ok := s.states[name].(SeqCopier)
		if !ok {
			return fmt.Errorf("backend %s cannot copy KV cells between sequences", name)
		}
		if err := c.CopySeq(dst, src, n); err != nil {
			return fmt.Errorf("backend %s: %w", name, err)
		}
	}
	return nil
}

// ShiftSeq shifts the cells on every backend that holds KV caches of the
// graph (KVShifter); a backend that cannot fails the shift. Each backend
// checks what it can shift before it changes anything, but a failure on a
// later backend leaves the earlier ones shifted: the caller must then
// treat the sequence as lost (the runtime empties it).
func (s *splitState) ShiftSeq(seq, keep, discard, n int) error {
	for _, name := range s.names {
		if _, ok := s.states[name].(KVShifter); !ok {
			return fmt.Errorf("backend %s cannot shift KV cells (context shift)", name)
		}
	}
	for _, name := range s.names {
		if err := s.states[name].(KVShifter).ShiftSeq(seq, keep, discard, n); err != nil {
			return fmt.Errorf("backend %s: %w", name, err)
		}
	}
	return nil
}

func (s *splitState) Close() error {
	var errs []error
	for i := len(s.names) - 1; i >= 0; i-- {
		errs = append(errs, closeAny(s.states[s.names[i]]))
	}
	return errors.Join(errs...)
}

func closeAny(x any) error {
	if c, ok := x.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
