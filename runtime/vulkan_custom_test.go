package runtime

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
)

var registerVkOps sync.Once

// vkOps registers two custom ops with CPU and Vulkan kernels (SPIR-V in
// testdata/custom): VkSiLU (x·σ(beta·x), an attribute) and VkMulRow
// (x times a weight row, a weight operand).
func vkOps(t *testing.T) {
	spv := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "runtime", "testdata", "custom", name+".spv"))
		require.NoError(t, err)
		return b
	}
	same := func(in []graph.Type, _ graph.Attrs) (graph.Type, error) { return in[0], nil }
	dispatch := func(rows, width int) [3]uint32 { return [3]uint32{uint32(min((rows*width+63)/64, 1024)), 1, 1} }
	silu, mulRow := spv("vk_silu"), spv("vk_mul_row")
	registerVkOps.Do(func() {
		require.NoError(t, ops.Register(ops.Custom{Name: "VkSiLU", Arity: 1, Attrs: []string{"beta"}, Infer: same,
			CPU: func(c *ops.Call) error {
				beta := c.Attrs.Float("beta")
				lo, hi := c.Span(c.Out.Rows)
				for r := lo; r < hi; r++ {
					for i, x := range c.In[0].Row(r) {
						c.Out.Row(r)[i] = x / (1 + float32(math.Exp(float64(-beta*x))))
					}
				}
				return nil
			},
			Vulkan: &ops.VulkanKernel{SPIRV: silu, Workgroup: 64, Dispatch: dispatch}}))
		require.NoError(t, ops.Register(ops.Custom{Name: "VkMulRow", Arity: 2, Infer: same,
			CPU: func(c *ops.Call) error {
				lo, hi := c.Span(c.Out.Rows)
				w := c.In[1].F32
				for r := lo; r < hi; r++ {
					for i, x := range c.In[0].Row(r) {
						c.Out.Row(r)[i] = x * w[i]
					}
				}
				return nil
			},
			Vulkan: &ops.VulkanKernel{SPIRV: mulRow, Workgroup: 64, Dispatch: dispatch}}))
	})
}

// vkSwap puts VkSiLU in place of SiLU and VkMulRow in place of every
// norm's weight multiply.
var vkSwap = passes.Insertion{After: "simplify", Pass: passes.New("vk-ops", func(g *graph.Graph) (passes.Change, error) {
	var c passes.Change
	for _, n := range g.Nodes {
		switch {
		case n.Op == ops.SiLU:
			n.Op, n.Attrs = "VkSiLU", graph.Attrs{"beta": 1}
			c.Count++
		case n.Op == ops.Mul && g.Nodes[n.Inputs[1]].Op == "Weight":
			n.Op = "VkMulRow"
			c.Count++
		}
	}
	return c, nil
})}

// Custom ops with Vulkan kernels run on the GPU, in one split, with the
// model's built-in story; their values agree with their CPU kernels'
// node by node.
func TestCustomOpVulkanKernels(t *testing.T) {
	skipWithoutVulkanDevice(t)
	vkOps(t)
	want := generate(t, openStories(t), 16)
	co := CompileOptions{Backend: "vulkan", Insert: []passes.Insertion{vkSwap}}
	m, err := Open(stories(t), Options{Backend: "vulkan", Compile: co})
	require.NoError(t, err)
	defer m.Close()
	custom := 0
	for _, n := range m.Plan.Graph.Nodes {
		if ops.IsCustom(n.Op) {
			custom++
			assert.Equal(t, "vulkan", n.Backend, "%s %s", n.Op, n.Name)
		}
	}
	assert.Equal(t, 5+11, custom, "5 SiLUs, 11 norm weights")
	assert.Empty(t, m.BackendNotes, "no split")
	assert.Equal(t, want, generate(t, m, 16))

	cpu := dumpRunWith(t, stories(t), "cpu", CompileOptions{Insert: []passes.Insertion{vkSwap}}, 3)
	gpu := dumpRunWith(t, stories(t), "vulkan", co, 3)
	r := diffDumps(t, cpu, gpu)
	require.NotEmpty(t, r.Compared)
	if r.First >= 0 {
		c := r.Compared[r.First]
		t.Fatalf("CPU and Vulkan kernels first differ at step %d %q (%s): rel %.3g", c.Step, c.Name, c.Op, c.Rel)
	}
}
