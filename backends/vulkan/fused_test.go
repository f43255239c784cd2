//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/reference"
	"github.com/weft-ml/weft/model/synth"
	"github.com/weft-ml/weft/ops"
)

// The norms and the attention write their matmuls' activations
// themselves (Q8_0 here: heads of 64 are whole blocks), and the model's
// logits and greedy tokens are the CPU backend's.
func TestFusedActivations(t *testing.T) {
	d := vulkantest.Open(t)
	vocab := storiesVocab(t)
	for _, typ := range []string{"q8_0", "q4_1", "f16"} {
		t.Run(typ, func(t *testing.T) {
			shape := synth.Shape{Dim: 256, FFN: 512, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 128}
			path := writeSynth(t, vocab, typ, shape, 3)
			g, f := compileFor(t, path, 64)
			e := load(t, d, g, f, 64)
			fused := map[string]int{}
			for id := range vulkan.FusedActivations(e) {
				fused[g.Nodes[id].Op]++
			}
			want := map[string]int{ops.RMSNormMul: 4, ops.Attention: 2} // two norms and an attention a layer
			if typ == "f16" {
				want = map[string]int{ops.RMSNormMul: 5} // binary16 rounding: norms only
			}
			for op, n := range want {
				assert.GreaterOrEqual(t, fused[op], n, "%s nodes writing their matmuls' activations: %v", op, fused)
			}

			host, err := backends.Lookup("cpu")
			require.NoError(t, err)
			cg, _ := compileRefusing(t, path, 64, allOps) // the same model placed on the CPU alone
			cp, err := host.Load(cg, f, backends.LoadOptions{MaxTokens: 64})
			require.NoError(t, err)
			run := func(p backends.Program) func(tokens []int32, pos int) []float32 {
				s, err := p.NewState(backends.StateOptions{Ctx: 128})
				require.NoError(t, err)
				if c, ok := s.(io.Closer); ok {
					t.Cleanup(func() { c.Close() })
				}
				return func(tokens []int32, pos int) []float32 {
					out, err := s.Run(backends.Batch{Tokens: tokens, Positions: seq(pos, len(tokens)), Rows: seq(0, len(tokens))})
					require.NoError(t, err)
					return append([]float32(nil), out...)
				}
			}
			gpu, cpu := run(e), run(cp)
			prompt := []int32{1, 400, 52, 9, 300, 17, 88}
			lg, lc := gpu(prompt, 0), cpu(prompt, 0)
			assert.Less(t, rel(lg, lc), 2e-3, "prompt logits")
			for step := 0; step < 8; step++ {
				a, b := reference.Argmax(lg[len(lg)-512:]), reference.Argmax(lc[len(lc)-512:])
				require.Equal(t, b, a, "greedy step %d", step)
				pos := len(prompt) + step
				lg, lc = gpu([]int32{int32(a)}, pos), cpu([]int32{int32(b)}, pos)
				assert.Less(t, rel(lg, lc), 2e-3, "step %d logits", step)
			}
		})
	}
}

func rel(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		d := float64(a[i] - b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}

// allOps refuses every op on Vulkan: the graph is placed on the CPU.
var allOps = graph.Ops()
