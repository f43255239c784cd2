package backendtest_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/backendtest"
	"github.com/weft-ml/weft/backends/cpu"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/quant"
)

// subset is an executing backend of its own name that runs what it
// supports on the CPU backend's kernels: it refuses some ops, some weight
// types, [1, D] broadcast weights and the f32 KV cache, each with a cause,
// and offers no weight layouts. It stands for a custom backend: the suite
// knows nothing about it but the contract.
type subset struct{ cpu cpu.Backend }

func (subset) Name() string { return "subset" }

var (
	subsetOps   = []string{ops.GELU, ops.Scale, ops.LayerNorm, ops.LayerNormMul, ops.LayerNormMulAdd, ops.Dequantize}
	subsetTypes = []gguf.TensorType{gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeBF16}
)

func (b subset) Supports(n *graph.Node, g *graph.Graph) error {
	if slices.Contains(subsetOps, n.Op) {
		return fmt.Errorf("subset has no %s kernel", n.Op)
	}
	for i, in := range n.Inputs {
		w := g.Nodes[in]
		if w.Op != "Weight" {
			continue
		}
		if slices.Contains(subsetTypes, w.Type.DType) {
			return fmt.Errorf("subset has no %s kernel for %s weights", n.Op, w.Type.DType)
		}
		if i > 0 && (n.Op == ops.Mul || n.Op == ops.Add) && len(w.Type.Shape) != 1 {
			return fmt.Errorf("subset broadcasts only a 1-D weight, not %s", w.Type)
		}
	}
	return b.cpu.Supports(n, g)
}

// Load hands the graph to the CPU backend under the CPU's name: the
// placement and the memory plan name this backend.
func (b subset) Load(g *graph.Graph, w backends.Weights, o backends.LoadOptions) (backends.Program, error) {
	g = g.Clone()
	for _, n := range g.Nodes {
		if n.Backend != b.Name() {
			return nil, fmt.Errorf("node %d (%s) is placed on %q, not on %s", n.ID, n.Op, n.Backend, b.Name())
		}
		n.Backend = b.cpu.Name()
	}
	if g.Memory != nil {
		g.Memory.Arenas = map[string]int64{b.cpu.Name(): g.Memory.Arenas[b.Name()]}
	}
	p, err := b.cpu.Load(g, w, o)
	if err != nil {
		return nil, err
	}
	return subsetProgram{p}, nil
}

type subsetProgram struct{ backends.Program }

func (p subsetProgram) NewState(o backends.StateOptions) (backends.State, error) {
	if o.KVType != backends.KVF16 {
		return nil, fmt.Errorf("subset keeps its KV cache in f16 only, not %s", o.KVType)
	}
	return p.Program.NewState(o)
}

// TestSubsetBackend runs the suite on a backend that is not the CPU's: what
// it declares unsupported must be refused with a cause, the rest must
// match the reference.
func TestSubsetBackend(t *testing.T) {
	unsupported := append([]string{ops.Mul + "/row2d", ops.Add + "/row2d", ops.Attention + "/f32"}, subsetOps...)
	for _, op := range []string{ops.GetRows, ops.MatMul, ops.MatMulAdd, ops.MatMulBias, ops.MatMulGateUpSwiGLU, ops.MatMulGateUpGeGLU, ops.MatMulQKV} {
		for _, dt := range subsetTypes {
			unsupported = append(unsupported, op+"/"+dt.String())
		}
	}
	backendtest.Run(t, subset{}, backendtest.Options{Unsupported: unsupported})
}

// TestCatalogue checks that the suite covers every registered op.
func TestCatalogue(t *testing.T) {
	covered := backendtest.Ops()
	for _, op := range graph.Ops() {
		if op == "Input" || op == "Weight" {
			continue
		}
		assert.Contains(t, covered, op, "the conformance suite has no test for op %s", op)
	}
	// Weight types the CPU backend runs (quant.Supported), each once, and
	// at least the fifteen the suite has covered so far.
	types := backendtest.WeightTypes()
	seen := map[gguf.TensorType]bool{}
	for _, typ := range types {
		assert.True(t, quant.Supported(typ), "%s is in the suite but the CPU does not run it", typ)
		assert.False(t, seen[typ], "%s is in the suite twice", typ)
		seen[typ] = true
	}
	assert.GreaterOrEqual(t, len(types), 15)
}

// mutant is the CPU backend with one defect planted behind the contract.
type mutant struct {
	cpu.Backend
	op     string              // the graphs it corrupts: those with a node of this op
	mutate func(out []float32) // corrupts a Run's result
	share  bool                // every session gets the same State
}

func (m mutant) Load(g *graph.Graph, w backends.Weights, o backends.LoadOptions) (backends.Program, error) {
	p, err := m.Backend.Load(g, w, o)
	if err != nil {
		return nil, err
	}
	hit := slices.ContainsFunc(g.Nodes, func(n *graph.Node) bool { return n.Op == m.op })
	return &mutantProgram{Program: p, m: m, hit: hit}, nil
}

type mutantProgram struct {
	backends.Program
	m      mutant
	hit    bool
	shared backends.State
}

func (p *mutantProgram) NewState(o backends.StateOptions) (backends.State, error) {
	if p.hit && p.m.share {
		if p.shared == nil {
			st, err := p.Program.NewState(o)
			if err != nil {
				return nil, err
			}
			p.shared = st
		}
		return p.shared, nil
	}
	st, err := p.Program.NewState(o)
	if err != nil || !p.hit || p.m.mutate == nil {
		return st, err
	}
	return mutantState{st, p.m.mutate}, nil
}

type mutantState struct {
	backends.State
	mutate func([]float32)
}

func (s mutantState) Run(b backends.Batch) ([]float32, error) {
	out, err := s.State.Run(b)
	if err == nil {
		s.mutate(out)
	}
	return out, err
}

// mutants are defects the suite must catch, each with the subtests it
// runs (a -test.run pattern under the helper) and the failure it must
// report.
var mutants = map[string]struct {
	m     mutant
	run   string
	opts  backendtest.Options
	wants string
}{
	// One ulp in one element of an op held to bit-exactness.
	"softmax-ulp": {
		m:     mutant{op: ops.Softmax, mutate: func(out []float32) { out[len(out)/2] = math.Nextafter32(out[len(out)/2], 2) }},
		run:   "Softmax",
		opts:  backendtest.Options{Tolerances: backendtest.ExactFor(ops.Softmax)},
		wants: "1 ulp",
	},
	// A relative error of 2⁻¹⁰ in one output of a Q4_0 matmul.
	"matmul-rel": {
		m:     mutant{op: ops.MatMul, mutate: func(out []float32) { out[len(out)-1] *= 1 + 0x1p-10 }},
		run:   "MatMul/Q4_0",
		wants: "outside |diff|",
	},
	// Two sessions of one Program sharing a KV cache.
	"shared-kv": {
		m:     mutant{op: ops.Attention, share: true},
		run:   "Attention/f16",
		wants: "values outside",
	},
}

// TestSuiteCatchesMutants runs the suite on each mutant in a child process
// (a failing suite fails its test) and checks that it fails as expected.
func TestSuiteCatchesMutants(t *testing.T) {
	if os.Getenv("BACKENDTEST_MUTANT") != "" {
		t.Skip("in a mutant's child process")
	}
	for name, mu := range mutants {
		t.Run(name, func(t *testing.T) {
			args := []string{"-test.run=^TestMutantHelper$/^" + strings.ReplaceAll(mu.run, "/", "$/^") + "$", "-test.count=1"}
			if testing.Short() {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "BACKENDTEST_MUTANT="+name)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the suite passed mutant %s:\n%s", name, out)
			assert.Contains(t, string(out), "--- FAIL: TestMutantHelper/"+mu.run)
			assert.Contains(t, string(out), mu.wants)
			t.Logf("mutant %s caught; first lines of the failure:\n%s", name, firstFailure(string(out)))
		})
	}
}

// TestMutantHelper is the child process of TestSuiteCatchesMutants.
func TestMutantHelper(t *testing.T) {
	name := os.Getenv("BACKENDTEST_MUTANT")
	if name == "" {
		t.Skip("runs only as a child of TestSuiteCatchesMutants")
	}
	mu, ok := mutants[name]
	require.True(t, ok, "unknown mutant %q", name)
	backendtest.Run(t, mu.m, mu.opts)
}

// firstFailure returns the lines around the first error message.
func firstFailure(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "Error:") {
			return strings.Join(lines[i:min(len(lines), i+4)], "\n")
		}
	}
	return ""
}
