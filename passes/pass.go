package passes

import (
	"fmt"

	"github.com/weft-ml/weft/graph"
)

// Pass rewrites a graph in place and says what it changed.
type Pass interface {
	Name() string
	Run(g *graph.Graph) (Change, error)
}

// Change is what one pass did: how many rewrites, the nodes they produced
// (IDs in the graph after the pass) and one line per rewrite.
type Change struct {
	Count   int      `json:"changes"`
	Nodes   []int    `json:"nodes,omitempty"`
	Details []string `json:"details,omitempty"`
}

func (c *Change) add(node int, format string, args ...any) {
	c.Count++
	if node >= 0 {
		c.Nodes = append(c.Nodes, node)
	}
	c.Details = append(c.Details, fmt.Sprintf(format, args...))
}

// LogEntry is one pass's record in a plan.
type LogEntry struct {
	Name        string `json:"name"`
	NodesBefore int    `json:"nodes_before"`
	NodesAfter  int    `json:"nodes_after"`
	Change
}

// funcPass adapts a function to Pass.
type funcPass struct {
	name string
	run  func(g *graph.Graph) (Change, error)
}

func (p funcPass) Name() string                       { return p.name }
func (p funcPass) Run(g *graph.Graph) (Change, error) { return p.run(g) }

// New makes a pass from a name and a function.
func New(name string, run func(g *graph.Graph) (Change, error)) Pass {
	return funcPass{name: name, run: run}
}

// Pipeline runs passes in order, verifying the graph after each one.
// After each pass named in DumpAfter (or every pass when it holds "all"),
// Dump receives the pass name and the graph; "lowered" (or "all") also
// dumps the graph before the first pass.
type Pipeline struct {
	Passes    []Pass
	DumpAfter []string
	Dump      func(pass string, g *graph.Graph) error
}

// Run applies the passes to g and returns their log.
func (p *Pipeline) Run(g *graph.Graph) ([]LogEntry, error) {
	if err := g.Verify(); err != nil {
		return nil, fmt.Errorf("input graph: %w", err)
	}
	var log []LogEntry
	if p.Dump != nil && p.wantsDump("lowered") {
		if err := p.Dump("lowered", g); err != nil {
			return nil, fmt.Errorf("dumping the lowered graph: %w", err)
		}
	}
	for _, ps := range p.Passes {
		before := len(g.Nodes)
		ch, err := ps.Run(g)
		if err != nil {
			return log, fmt.Errorf("pass %s: %w", ps.Name(), err)
		}
		if err := g.Verify(); err != nil {
			return log, fmt.Errorf("pass %s left an invalid graph: %w", ps.Name(), err)
		}
		log = append(log, LogEntry{Name: ps.Name(), NodesBefore: before, NodesAfter: len(g.Nodes), Change: ch})
		if p.Dump != nil && p.wantsDump(ps.Name()) {
			if err := p.Dump(ps.Name(), g); err != nil {
				return log, fmt.Errorf("dumping after %s: %w", ps.Name(), err)
			}
		}
	}
	return log, nil
}

func (p *Pipeline) wantsDump(name string) bool {
	for _, d := range p.DumpAfter {
		if d == "all" || d == name {
			return true
		}
	}
	return false
}
