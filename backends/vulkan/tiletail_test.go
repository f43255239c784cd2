//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/model/synth"
)

// A prefill gate·up on tiles (int8 tensor cores or not) writes its FFN
// down's Q8_0 or Q8_1 activations itself (gateUpTileTail): the logits are
// those of the separate quantize dispatch, bit for bit, and a prefill step
// saves one dispatch and one barrier a layer. Q4_1's down takes Q8_1.
func TestGateUpTileTail(t *testing.T) {
	d := vulkantest.Open(t)
	vocab := storiesVocab(t)
	shape := synth.Shape{Dim: 256, FFN: 512, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 128}
	saved := shape.Layers
	for _, typ := range []string{"q8_0", "q4_0", "q4_1"} {
		t.Run(typ, func(t *testing.T) {
			g, f := synthFor(t, vocab, typ, shape, 7)
			fused := load(t, d, g, f, 96)
			restore := vulkan.DisableTileTails()
			plain := load(t, d, g, f, 96)
			restore()
			prompt := scrambled(90) // 90 tokens: the tiles, a partial 64-token and 128-token tile
			sf, got := promptThenDecode(t, fused, backends.KVF16, shape.Ctx, prompt, 1)
			sp, want := promptThenDecode(t, plain, backends.KVF16, shape.Ctx, prompt, 1)
			for i := range want {
				require.Equal(t, f32Bits(want[i]), f32Bits(got[i]), "step %d: logits", i)
			}
			df, bf := vulkan.StepCounts(sf, len(prompt), len(prompt))
			dp, bp := vulkan.StepCounts(sp, len(prompt), len(prompt))
			t.Logf("%s prefill step: %d dispatches, %d barriers (quantizing separately: %d, %d)", d.Info().Name, df, bf, dp, bp)
			require.NotZero(t, dp, "the prefill step was recorded")
			assert.Equal(t, dp-saved, df, "dispatches")
			assert.Equal(t, bp-saved, bf, "barriers")
		})
	}
}
