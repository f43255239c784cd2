package compute

import (
	"fmt"
	"sort"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/passes"
)

// Options configure Compile.
type Options struct {
	MaxRows int // the most rows one Run takes; 0: 256
	Threads int // 0: all cores

	Passes    []string           // run only these passes, in order (empty: all)
	Disable   []string           // passes to leave out
	Insert    []passes.Insertion // passes of the program's own (passes.Insert)
	DumpAfter []string           // pass names, "lowered" or "all": Dump sees the graph then
	Dump      func(pass string, g *graph.Graph) error
}

// Program is a compiled graph: immutable, shared by its Sessions.
type Program struct {
	g      *graph.Graph
	prog   *cpu.Program
	log    []passes.LogEntry
	packed []byte
}

// Compile optimises a copy of the graph built so far (the Builder stays
// usable) with the passes, places it on the CPU, plans its memory for
// o.MaxRows rows and loads it.
func (b *Builder) Compile(o Options) (*Program, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	g, _ := b.gb.Graph()
	if len(g.Outputs) == 0 {
		return nil, fmt.Errorf("the graph has no outputs (Builder.Output)")
	}
	g = g.Clone()
	if o.MaxRows == 0 {
		o.MaxRows = 256
	}
	if o.MaxRows < 0 || o.MaxRows > cpu.MaxBatch {
		return nil, fmt.Errorf("MaxRows %d: want 1 to %d", o.MaxRows, cpu.MaxBatch)
	}
	host, err := backends.Lookup("cpu")
	if err != nil {
		return nil, err
	}
	p := &Program{g: g}
	cfg := passes.Config{Backends: []backends.Backend{host}, Tokens: o.MaxRows, Weights: b.weights, Packed: &p.packed}
	list, err := passes.Select(cfg, o.Passes, o.Disable, false)
	if err != nil {
		return nil, err
	}
	if list, err = passes.Insert(list, o.Insert...); err != nil {
		return nil, err
	}
	pl := passes.Pipeline{Passes: list, DumpAfter: o.DumpAfter, Dump: o.Dump}
	if p.log, err = pl.Run(g); err != nil {
		return nil, err
	}
	if p.prog, err = cpu.Compile(g, b.weights, cpu.Options{MaxTokens: o.MaxRows, Threads: o.Threads, Packed: p.packed, General: true}); err != nil {
		return nil, err
	}
	return p, nil
}

// Graph returns the compiled graph: every node with its placement, fusion
// and buffer (graph.WriteText and the other dumps show it).
func (p *Program) Graph() *graph.Graph { return p.g }

// Passes returns what each pass did.
func (p *Program) Passes() []passes.LogEntry { return p.log }

// MaxRows is the most rows one Run takes.
func (p *Program) MaxRows() int { return p.prog.MaxTokens() }

// Inputs lists the graph's inputs by name with their types.
func (p *Program) Inputs() map[string]graph.Type { return p.types(p.g.Inputs) }

// Outputs lists the graph's outputs by name with their types.
func (p *Program) Outputs() map[string]graph.Type { return p.types(p.g.Outputs) }

func (p *Program) types(ids map[string]int) map[string]graph.Type {
	out := make(map[string]graph.Type, len(ids))
	for name, id := range ids {
		out[name] = p.g.Nodes[id].Type
	}
	return out
}

func sortedNames(m map[string]int) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
