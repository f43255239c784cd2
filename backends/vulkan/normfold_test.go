//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/internal/reference"
	"github.com/weft-ml/weft/model/synth"
)

// A decode step's norms folded into the matvecs around them (foldNorms:
// the residual's matmul writes the blocks of h·w and their Σh², the
// reader scales them) save one dispatch and one barrier each — every
// norm whose input a MatMulAdd writes: all but the first layer's
// attention norm and the output norm — and their logits stay within
// 1e-4 (relative, the whole vector) of the separate norms', whose
// numerics they change only by the products' rounding; the greedy tokens
// are the same. Prefills do not fold: the same bits. Rows of 640: the
// gate·up's 20 blocks end 52 words into their last 64-word line, so the
// down's activations its tail writes would fall on the blocks' Σh² if
// they were not counted (other workgroups still read those).
//
// Q4_K_M (Q8_K activations: the producers write Q8_K super-blocks) with
// rows of 768: its last layer's V and FFN down are Q6_K (its QKV three
// matvecs, each scaling the blocks; the FFN down a Q6_K producer).
func TestFoldedNorms(t *testing.T) {
	d := vulkantest.Open(t)
	vocab := storiesVocab(t)
	const layers = 3
	for _, typ := range []string{"q4_0", "q8_0", "q5_0", "q4_k_m"} {
		t.Run(typ, func(t *testing.T) {
			shape := synth.Shape{Dim: 640, FFN: 1792, Layers: layers, Heads: 10, KVHeads: 2, Vocab: 512, Ctx: 64}
			if typ == "q4_k_m" {
				shape.Dim, shape.Heads, shape.KVHeads = 768, 12, 4
			}
			const folds = 2*layers - 1
			g, f := synthFor(t, vocab, typ, shape, 11)
			folded := load(t, d, g, f, 64)
			assert.Equal(t, folds, vulkan.FoldedNorms(folded), "folded norms")
			restore := vulkan.DisableNormFold()
			plain := load(t, d, g, f, 64)
			restore()
			run := func(e *vulkan.Executable) (*vulkan.Session, [][]float32) {
				s, err := e.NewSession(backends.StateOptions{Ctx: 64})
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				prompt := []int32{1, 400, 52, 9, 300, 17, 88}
				lg, err := s.Run(backends.Batch{Tokens: prompt, Positions: seq(0, len(prompt)), Rows: seq(0, len(prompt))})
				require.NoError(t, err)
				out := [][]float32{append([]float32(nil), lg...)}
				tok := reference.Argmax(lg[len(lg)-512:])
				for step := range 8 {
					lg, err = s.Run(backends.Batch{Tokens: []int32{int32(tok)}, Positions: []int32{int32(len(prompt) + step)}, Rows: []int32{0}})
					require.NoError(t, err)
					out = append(out, append([]float32(nil), lg...))
					tok = reference.Argmax(lg)
				}
				return s, out
			}
			sf, got := run(folded)
			sp, want := run(plain)
			require.Equal(t, f32Bits(want[0]), f32Bits(got[0]), "prefill logits")
			for i := 1; i < len(want); i++ {
				assert.Less(t, rel(got[i], want[i]), 1e-4, "decode step %d logits", i)
				require.Equal(t, reference.Argmax(want[i]), reference.Argmax(got[i]), "decode step %d greedy token", i)
			}
			df, bf := vulkan.StepCounts(sf, 1, 1)
			dp, bp := vulkan.StepCounts(sp, 1, 1)
			t.Logf("decode step: %d dispatches, %d barriers (norms apart: %d, %d)", df, bf, dp, bp)
			assert.Equal(t, dp-folds, df, "dispatches")
			assert.Equal(t, bp-folds, bf, "barriers")
		})
	}
}
