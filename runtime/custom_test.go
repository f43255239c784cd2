package runtime

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
)

var registerGoSiLU sync.Once

// goSiLU is a custom op computing x·σ(x) in Go, one row span per thread.
func goSiLU(t *testing.T) {
	registerGoSiLU.Do(func() {
		require.NoError(t, ops.Register(ops.Custom{Name: "GoSiLU", Arity: 1, InPlace: []int{0},
			Infer: func(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
				if in[0].DType != graph.F32 || len(in[0].Shape) != 2 {
					return graph.Type{}, fmt.Errorf("want an F32 matrix, got %s", in[0])
				}
				return in[0], nil
			},
			CPU: func(c *ops.Call) error {
				lo, hi := c.Span(c.Out.Rows)
				for r := lo; r < hi; r++ {
					y := c.Out.Row(r)
					for i, x := range c.In[0].Row(r) {
						y[i] = x / (1 + float32(math.Exp(float64(-x))))
					}
				}
				return nil
			}}))
	})
}

// swapSiLU is a user pass putting GoSiLU in place of every SiLU.
var swapSiLU = passes.Insertion{Before: "fuse-gateup", Pass: passes.New("go-silu", func(g *graph.Graph) (passes.Change, error) {
	var c passes.Change
	for _, n := range g.Nodes {
		if n.Op == ops.SiLU {
			n.Op = "GoSiLU"
			c.Count++
		}
	}
	return c, nil
})}

func generate(t *testing.T, m *Model, n int) string {
	t.Helper()
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	res, err := s.Generate(context.Background(), "Once upon a time", greedy(n), nil)
	require.NoError(t, err)
	return res.Text
}

// A custom activation swapped into the llama model by a user pass runs on
// the CPU (the fusions leave it alone: no SwiGLU fusion) and gives the
// built-in activation's story.
func TestCustomOpInModel(t *testing.T) {
	goSiLU(t)
	want := generate(t, openStories(t), 24)
	m, err := Open(stories(t), Options{Compile: CompileOptions{Insert: []passes.Insertion{swapSiLU}}})
	require.NoError(t, err)
	defer m.Close()
	assert.Equal(t, []string{"GoSiLU"}, m.Plan.CustomOps)
	n := 0
	for _, nd := range m.Plan.Graph.Nodes {
		assert.NotEqual(t, ops.MatMulGateUpSwiGLU, nd.Op)
		if nd.Op == "GoSiLU" {
			n++
		}
	}
	assert.Equal(t, 5, n)
	assert.Equal(t, want, generate(t, m, 24))
}

// In a Vulkan plan the custom op, which has no Vulkan kernel, is placed
// on the CPU and runs there between the GPU's splits.
func TestCustomOpOnCPUInsideVulkanPlan(t *testing.T) {
	skipWithoutVulkanDevice(t)
	goSiLU(t)
	want := generate(t, openStories(t), 16)
	m, err := Open(stories(t), Options{Backend: "vulkan", Compile: CompileOptions{Backend: "vulkan", Insert: []passes.Insertion{swapSiLU}}})
	require.NoError(t, err)
	defer m.Close()
	for _, nd := range m.Plan.Graph.Nodes {
		if nd.Op == "GoSiLU" {
			assert.Equal(t, "cpu", nd.Backend)
			assert.Contains(t, nd.Cause, "vulkan: no Vulkan shader for GoSiLU")
		}
	}
	require.NotEmpty(t, m.BackendNotes)
	assert.Contains(t, strings.Join(m.BackendNotes, "\n"), `GoSiLU "blk.0.ffn_silu"`)
	assert.Equal(t, want, generate(t, m, 16))
}

// A plan records its custom ops; a program that has not registered one
// cannot load the plan, and the error names the op.
func TestPlanWithUnregisteredCustomOp(t *testing.T) {
	goSiLU(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "s.plan")
	p, err := CompileTo(stories(t), plan, CompileOptions{Ctx: 64, Insert: []passes.Insertion{swapSiLU}})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	m, err := Open(plan, Options{})
	require.NoError(t, err, "this program registered GoSiLU")
	require.NoError(t, m.Close())

	// The same plan as a program without GoSiLU sees it: an op it has
	// never heard of.
	data, err := os.ReadFile(plan)
	require.NoError(t, err)
	require.Contains(t, string(data), `"custom_ops": [`)
	other := filepath.Join(dir, "other.plan")
	require.NoError(t, os.WriteFile(other, []byte(strings.ReplaceAll(string(data), `"GoSiLU"`, `"ElsewhereSiLU"`)), 0o644))
	_, err = Open(other, Options{})
	assert.ErrorContains(t, err, "the plan uses op ElsewhereSiLU, which this program does not know: a custom op must be registered (ops.Register)")
}
