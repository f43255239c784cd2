package graph_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

func f32(dims ...any) graph.Type { return graph.Type{DType: graph.F32, Shape: graph.S(dims...)} }

// small builds x -> RMSNorm -> Mul(w) -> MatMul(w2) as a tiny valid graph.
func small(t *testing.T) *graph.Graph {
	b := graph.NewBuilder()
	x := b.Input("x", f32(graph.Tokens, 8))
	w := b.Weight("norm.weight", f32(8))
	m := b.Weight("proj.weight", f32(4, 8))
	n := b.Op(ops.RMSNorm, "norm", graph.Attrs{"eps": 1e-5}, x)
	n = b.Op(ops.Mul, "norm_w", nil, n, w)
	y := b.Op(ops.MatMul, "proj", nil, n, m)
	b.Output("y", y)
	g, err := b.Graph()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBuilderInfersTypes(t *testing.T) {
	g := small(t)
	y := g.Nodes[g.Outputs["y"]]
	if got := y.Type.String(); got != "F32[T,4]" {
		t.Fatalf("output type %s", got)
	}
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestBuilderRecordsFirstError(t *testing.T) {
	b := graph.NewBuilder()
	b.SetLayer(3)
	x := b.Input("x", f32(graph.Tokens, 8))
	m := b.Weight("w", f32(4, 7))
	bad := b.Op(ops.MatMul, "proj", nil, x, m)
	b.Op(ops.SiLU, "after", nil, bad) // must be a no-op
	_, err := b.Graph()
	if err == nil || !strings.Contains(err.Error(), "MatMul") || !strings.Contains(err.Error(), "layer 3") {
		t.Fatalf("got %v, want the MatMul error with its layer", err)
	}
	if b.Op("NoSuchOp", "x", nil) != -1 {
		t.Fatal("builder kept going after an error")
	}
}

func TestVerifyCatchesCorruption(t *testing.T) {
	g := small(t)
	g.Nodes[4].Type.Shape = graph.S(graph.Tokens, 9) // wrong stored type
	if err := g.Verify(); err == nil || !strings.Contains(err.Error(), "inferred") {
		t.Errorf("type mismatch: %v", err)
	}
	g = small(t)
	g.Nodes[3].Inputs = []int{5} // RMSNorm reads the node that reads it: a cycle
	if err := g.Verify(); err == nil {
		t.Error("cycle not detected")
	}
	g = small(t)
	g.Nodes[5].Inputs[1] = 99
	if err := g.Verify(); err == nil || !strings.Contains(err.Error(), "missing node 99") {
		t.Errorf("dangling input: %v", err)
	}
}

func TestTopoOrderIsStable(t *testing.T) {
	g := small(t)
	a, _ := g.TopoOrder()
	b, _ := g.TopoOrder()
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("order differs between calls")
		}
	}
	pos := map[int]int{}
	for i, id := range a {
		pos[id] = i
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if pos[in] >= pos[n.ID] {
				t.Errorf("node %d comes before its input %d", n.ID, in)
			}
		}
	}
}

func TestDumps(t *testing.T) {
	g := small(t)
	var text, js, dot bytes.Buffer
	if err := graph.WriteText(&text, g); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(text.String(), "\n"); lines != len(g.Nodes)+1 {
		t.Errorf("text dump has %d lines for %d nodes:\n%s", lines, len(g.Nodes), text.String())
	}
	if err := graph.WriteJSON(&js, g); err != nil || !strings.Contains(js.String(), `"op": "MatMul"`) {
		t.Errorf("json dump: %v\n%s", err, js.String())
	}
	if err := graph.WriteDOT(&dot, g); err != nil || strings.Count(dot.String(), "->") != 5 {
		t.Errorf("dot dump (want 5 edges): %v\n%s", err, dot.String())
	}
}

func TestRegisterRejectsDuplicates(t *testing.T) {
	if err := graph.Register(graph.OpDef{Name: ops.MatMul, Arity: 2, Infer: func([]graph.Type, graph.Attrs) (graph.Type, error) { return graph.Type{}, nil }}); err == nil {
		t.Fatal("duplicate op registered")
	}
}
