//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/internal/reference"
	"github.com/weft-ml/weft/internal/testenv"
)

// TestArchitectures runs the qwen2, phi2, gemma and Llama-3 fixtures of
// ../shared/models-arch wholly on Vulkan against llama.cpp's references
// in ../shared/reference-arch, every prompt with an f16 and an f32 KV
// cache, under the end-to-end rule (they have random weights: no greedy
// text, top-5 agreement instead). Every node must be placed on Vulkan:
// biases, LayerNorm, GELU, the scales and the fused ops have shaders.
// In -short mode only the first prompt of each model runs.
func TestArchitectures(t *testing.T) {
	d := vulkantest.Open(t)
	refDir := testenv.Shared(t, "reference-arch")
	modelDir := testenv.Shared(t, "models-arch")
	for _, name := range []string{"synth-qwen2-f32", "synth-phi2-f32", "synth-gemma-f32", "synth-llama3-f32"} {
		t.Run(name, func(t *testing.T) {
			g, f := compileFor(t, filepath.Join(modelDir, name+".gguf"), 64)
			for _, n := range g.Nodes {
				if n.Op != "Input" { // graph inputs live in host memory
					require.Equal(t, "vulkan", n.Backend, "node %d (%s %q) placed on %s: %s", n.ID, n.Op, n.Name, n.Backend, n.Cause)
				}
			}
			e := load(t, d, g, f, 64)
			prompts, _ := filepath.Glob(filepath.Join(refDir, name+".p[0-9].json"))
			require.NotEmpty(t, prompts)
			if testing.Short() {
				prompts = prompts[:1]
			}
			min5, total, atLeast4 := 5, 0, 0
			for _, p := range prompts {
				f16 := reference.Load(t, refDir, filepath.Base(p))
				f32 := reference.Load(t, refDir, strings.TrimSuffix(filepath.Base(p), ".json")+".kvf32.json")
				bar := reference.Bar(reference.Spread(f16, f32))
				for _, ref := range []*reference.Reference{f16, f32} {
					_, m, n, a := checkReference(t, e, ref, bar, false)
					min5, total, atLeast4 = min(min5, m), total+n, atLeast4+a
				}
			}
			frac := float64(atLeast4) / float64(total)
			t.Logf("%s: top-5 overlap min %d, >=4 at %.2f%% of %d positions", name, min5, 100*frac, total)
			assert.GreaterOrEqual(t, min5, 3, "top-5 overlap")
			if !testing.Short() { // a statistic over every prompt
				assert.GreaterOrEqual(t, frac, 0.99, "share of positions with top-5 overlap >= 4")
			}
		})
	}
}
