package passes

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model"
	"github.com/weft-ml/weft/ops"
)

// fakeBackend supports the ops it lists.
type fakeBackend struct {
	name string
	ops  map[string]bool
}

func (b fakeBackend) Name() string { return b.name }
func (b fakeBackend) Supports(n *graph.Node, _ *graph.Graph) error {
	if b.ops[n.Op] || n.Op == "Input" || n.Op == "Weight" {
		return nil
	}
	return fmt.Errorf("no %s kernel", n.Op)
}

func allCPU() fakeBackend {
	m := map[string]bool{}
	for _, op := range graph.Ops() {
		m[op] = true
	}
	return fakeBackend{"cpu", m}
}

// gpu runs matmuls and norms but not attention, RoPE or embeddings.
func gpu() fakeBackend {
	m := map[string]bool{}
	for _, op := range []string{ops.MatMul, ops.MatMulQKV, ops.MatMulAdd, ops.MatMulGateUpSwiGLU, ops.RMSNorm, ops.RMSNormMul, ops.Mul, ops.Add, ops.SiLU, ops.Part, ops.Copy} {
		m[op] = true
	}
	return fakeBackend{"gpu", m}
}

func stories(t *testing.T) (*graph.Graph, *gguf.File) {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	l, err := model.Lower(f)
	if err != nil {
		t.Fatal(err)
	}
	return l.Graph, f
}

func runPasses(t *testing.T, g *graph.Graph, c Config, names ...string) []LogEntry {
	t.Helper()
	list, err := Select(c, names, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p := Pipeline{Passes: list}
	log, err := p.Run(g)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

func TestFusionCounts(t *testing.T) {
	g, _ := stories(t)
	before := len(g.Nodes)
	log := runPasses(t, g, Config{Backends: []backends.Backend{allCPU()}})
	count := map[string]int{}
	for _, n := range g.Nodes {
		count[n.Op]++
		if ops.IsFused(n.Op) && len(n.Fused) < 2 {
			t.Errorf("fused node %q lists members %v", n.Name, n.Fused)
		}
	}
	layers := 5
	want := map[string]int{ops.MatMulQKV: layers, ops.MatMulGateUpSwiGLU: layers, ops.RMSNormMul: 2*layers + 1, ops.MatMulAdd: 2 * layers, ops.Part: 3 * layers,
		ops.SiLU: 0, ops.RMSNorm: 0, ops.Add: 0}
	for op, n := range want {
		if count[op] != n {
			t.Errorf("%d %s nodes, want %d", count[op], op, n)
		}
	}
	if len(g.Nodes) >= before || len(log) != len(Names()) {
		t.Fatalf("%d nodes from %d, %d log entries", len(g.Nodes), before, len(log))
	}
}

func TestPlacementAcrossBackends(t *testing.T) {
	g, _ := stories(t)
	runPasses(t, g, Config{Backends: []backends.Backend{gpu(), allCPU()}}, "fuse-qkv", "fuse-norm", "placement")
	for _, n := range g.Nodes {
		if n.Backend == "" || n.Cause == "" {
			t.Fatalf("node %d %s %q has no placement or cause", n.ID, n.Op, n.Name)
		}
		switch {
		case n.Op == ops.MatMulQKV && (n.Backend != "gpu" || !strings.Contains(n.Cause, "weight")):
			t.Errorf("%s %q on %s (%s), want gpu because of its weights", n.Op, n.Name, n.Backend, n.Cause)
		case n.Op == ops.Attention && n.Backend != "cpu":
			t.Errorf("attention on %s, which does not support it", n.Backend)
		case n.Op == "Input" && n.Backend != "cpu":
			t.Errorf("input on %s, want the host", n.Backend)
		}
		for _, in := range n.Inputs {
			if src := g.Nodes[in]; src.Backend != n.Backend && n.Op != ops.Copy {
				t.Errorf("edge %s(%s) -> %s(%s) crosses backends without a copy", src.Name, src.Backend, n.Name, n.Backend)
			}
		}
	}
	if len(g.Splits) < 10 {
		t.Errorf("%d splits, want several per layer", len(g.Splits))
	}
}

func TestPlacementFailsWithoutSupport(t *testing.T) {
	g, _ := stories(t)
	_, err := place(g, Config{Backends: []backends.Backend{gpu()}})
	if err == nil || !strings.Contains(err.Error(), "no backend supports") {
		t.Fatalf("got %v, want an unsupported-op error", err)
	}
}

// TestMemoryPlanHasNoOverlaps checks, independently of the planner, that
// no two buffers that are live at the same step share bytes, except a
// result and the dead operand it overwrites in place, and views.
func TestMemoryPlanHasNoOverlaps(t *testing.T) {
	g, _ := stories(t)
	runPasses(t, g, Config{Tokens: 32})
	order, _ := g.TopoOrder()
	step := map[int]int{}
	for i, id := range order {
		step[id] = i
	}
	end := map[int]int{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			src := in
			if g.Nodes[in].Op == ops.Part {
				src = g.Nodes[in].Inputs[0]
			}
			end[src] = max(end[src], step[n.ID])
		}
	}
	end[g.Outputs["logits"]] = len(order)
	var owned []*graph.Node
	for _, n := range g.Nodes {
		if n.Buffer != nil && !n.Buffer.View {
			owned = append(owned, n)
		}
	}
	for i, a := range owned {
		for _, b := range owned[i+1:] {
			overlap := a.Buffer.Offset < b.Buffer.Offset+b.Buffer.Size && b.Buffer.Offset < a.Buffer.Offset+a.Buffer.Size
			first, second := a, b
			if step[b.ID] < step[a.ID] {
				first, second = b, a
			}
			if overlap && end[first.ID] > step[second.ID] {
				t.Fatalf("%q [%d,+%d) and %q [%d,+%d) overlap while both live", a.Name, a.Buffer.Offset, a.Buffer.Size, b.Name, b.Buffer.Offset, b.Buffer.Size)
			}
			if overlap && end[first.ID] == step[second.ID] && a.Buffer.Offset != b.Buffer.Offset {
				t.Fatalf("%q overwrites part of %q's buffer while reading it", second.Name, first.Name)
			}
		}
	}
	if m := g.Memory; m.Arenas["cpu"]*4 > m.Naive {
		t.Fatalf("arena %d bytes is not far below the naive sum %d", m.Arenas["cpu"], m.Naive)
	}
}

func TestSimplify(t *testing.T) {
	b := graph.NewBuilder()
	x := b.Input("x", graph.Type{DType: graph.F32, Shape: graph.S(graph.Tokens, 8)})
	s1 := b.Op(ops.Scale, "s1", graph.Attrs{"scale": 2}, x)
	s2 := b.Op(ops.Scale, "s2", graph.Attrs{"scale": 2}, x)
	one := b.Op(ops.Scale, "one", graph.Attrs{"scale": 1}, s2)
	b.Op(ops.SiLU, "dead", nil, x)
	b.Output("y", b.Op(ops.Add, "sum", nil, s1, one))
	g, err := b.Graph()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := simplify(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != 3 || ch.Count != 3 {
		t.Fatalf("%d nodes, %d changes %v; want x, one Scale and Add after 3 changes", len(g.Nodes), ch.Count, ch.Details)
	}
	sum := g.Nodes[g.Outputs["y"]]
	if sum.Inputs[0] != sum.Inputs[1] || g.Nodes[sum.Inputs[0]].Op != ops.Scale {
		t.Fatalf("Add reads %v, want the surviving Scale twice", sum.Inputs)
	}
}

func TestFuseDequant(t *testing.T) {
	b := graph.NewBuilder()
	x := b.Input("x", graph.Type{DType: graph.F32, Shape: graph.S(graph.Tokens, 32)})
	w := b.Weight("w", graph.Type{DType: gguf.TypeQ4_0, Shape: graph.S(16, 32)})
	d := b.Op(ops.Dequantize, "w_f32", nil, w)
	b.Output("y", b.Op(ops.MatMul, "y", nil, x, d))
	g, _ := b.Graph()
	ch, err := fuseDequant(g)
	if err != nil {
		t.Fatal(err)
	}
	y := g.Nodes[g.Outputs["y"]]
	if ch.Count != 1 || g.Nodes[y.Inputs[1]].Op != "Weight" || len(g.Nodes) != 3 {
		t.Fatalf("after fusion: %d changes, MatMul reads %s, %d nodes", ch.Count, g.Nodes[y.Inputs[1]].Op, len(g.Nodes))
	}
}

func TestPipelineDumpsAndVerifies(t *testing.T) {
	g, _ := stories(t)
	var dumped []string
	breaker := New("breaker", func(g *graph.Graph) (Change, error) {
		g.Nodes[len(g.Nodes)-1].Inputs = []int{len(g.Nodes) + 5}
		return Change{}, nil
	})
	qkv, _ := Make("fuse-qkv", Config{})
	p := Pipeline{Passes: []Pass{qkv, breaker}, DumpAfter: []string{"fuse-qkv"}, Dump: func(name string, _ *graph.Graph) error {
		dumped = append(dumped, name)
		return nil
	}}
	_, err := p.Run(g)
	if err == nil || !strings.Contains(err.Error(), "breaker left an invalid graph") {
		t.Fatalf("got %v, want the breaker caught by Verify", err)
	}
	if len(dumped) != 1 || dumped[0] != "fuse-qkv" {
		t.Fatalf("dumped %v", dumped)
	}
}

func TestSelect(t *testing.T) {
	o0, _ := Select(Config{}, nil, nil, true)
	if len(o0) != 1 || o0[0].Name() != "placement" {
		t.Fatalf("-O0 selected %d passes", len(o0))
	}
	some, _ := Select(Config{}, nil, []string{"fuse-qkv", "memory-plan"}, false)
	if len(some) != len(Names())-2 {
		t.Fatalf("--disable left %d passes", len(some))
	}
	if _, err := Select(Config{}, []string{"fuse-everything"}, nil, false); err == nil {
		t.Fatal("unknown pass accepted")
	}
}
