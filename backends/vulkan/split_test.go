//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/model"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
)

// refusing is the Vulkan backend as placement sees it, refusing some ops
// so that they run on the CPU, as an op without a shader would.
type refusing struct {
	vulkan.Backend
	ops []string
}

func (r refusing) Supports(n *graph.Node, g *graph.Graph) error {
	if slices.Contains(r.ops, n.Op) {
		return fmt.Errorf("refused by the test")
	}
	return r.Backend.Supports(n, g)
}

// compileRefusing compiles like compileFor with Vulkan refusing ops.
func compileRefusing(t testing.TB, path string, tokens int, refused []string) (*graph.Graph, *gguf.File) {
	t.Helper()
	f, err := gguf.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	l, err := model.Lower(f)
	require.NoError(t, err)
	host, err := backends.Lookup("cpu")
	require.NoError(t, err)
	list, err := passes.Select(passes.Config{Backends: []backends.Backend{refusing{ops: refused}, host}, Tokens: tokens}, nil, nil, false)
	require.NoError(t, err)
	_, err = (&passes.Pipeline{Passes: list}).Run(l.Graph)
	require.NoError(t, err)
	return l.Graph, f
}

// TestSplitExecution runs stories260K placed on Vulkan and the CPU
// together, values crossing between them every layer, against llama.cpp:
// greedy tokens exact and logits within the end-to-end rule. The refused
// ops put the embedding lookup, every attention (and so the KV cache), the
// norms or the output matrix on the CPU.
func TestSplitExecution(t *testing.T) {
	vulkantest.Open(t) // skips without a device; Load opens its own
	for _, refused := range [][]string{
		{ops.Attention},
		{ops.GetRows, ops.RMSNormMul},
		{ops.MatMul},
	} {
		t.Run(fmt.Sprint(refused), func(t *testing.T) {
			checkModelWith(t, "stories260K", true, func(path string) backends.Program {
				g, f := compileRefusing(t, path, 512, refused)
				require.Equal(t, []string{"vulkan", "cpu"}, sortedBackends(g))
				require.GreaterOrEqual(t, len(g.Splits), 2, "splits")
				for _, sp := range g.Splits {
					for _, id := range sp.Nodes {
						if n := g.Nodes[id]; slices.Contains(refused, n.Op) {
							require.Equal(t, "cpu", n.Backend, "node %d (%s)", id, n.Op)
						}
					}
				}
				p, err := backends.LoadSplits(g, f, backends.LoadOptions{MaxTokens: 512})
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, p.(interface{ Close() error }).Close()) })
				// The split program names the Vulkan split's device.
				require.Implements(t, (*backends.DeviceDescriber)(nil), p)
				assert.NotEmpty(t, p.(backends.DeviceDescriber).DeviceInfo().Name)
				t.Logf("%d splits", len(g.Splits))
				return p
			})
		})
	}
}

func sortedBackends(g *graph.Graph) []string {
	b := backends.SplitBackends(g)
	slices.Sort(b)
	slices.Reverse(b)
	return b
}

// TestWeightsInChunks runs stories260K (F32 and F16 weights) with every
// matrix cut into buffers of at most 8 KiB (28 rows of F32, 60 of F16;
// the embedding table in up to 19 buffers), as a weight larger than the
// device's storage-buffer range is cut (lavapipe: 128 MiB; the 1.1B
// model's F16 token_embd is 262 MB): greedy tokens exact, logits within
// the end-to-end rule.
func TestWeightsInChunks(t *testing.T) {
	d := vulkantest.Open(t)
	defer vulkan.SetWeightLimit(8 << 10)()
	for _, name := range []string{"stories260K", "stories260K-F16"} {
		t.Run(name, func(t *testing.T) { checkModel(t, d, name, 512) })
	}
	if !testing.Short() {
		// Q4_K and Q6_K blocks (144 and 210 bytes) in 64 KiB buffers.
		defer vulkan.SetWeightLimit(64 << 10)()
		t.Run("synth-15m-q4_k_m", func(t *testing.T) { checkModel(t, d, "synth-15m-q4_k_m", 512) })
	}
}
