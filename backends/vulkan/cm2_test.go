//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/model/synth"
	"github.com/weft-ml/weft/ops"
)

// An F16 model's prefill on cooperative matrix 2 (matmul_cm2.comp: its
// QKV, attention output, gate·up and FFN down where the device runs it;
// the NV tiles or the float tiles elsewhere) stays within the end-to-end
// rule of the CPU backend's logits.
func TestF16PrefillCoopMatrix2(t *testing.T) {
	d := vulkantest.Open(t)
	shape := synth.Shape{Dim: 256, FFN: 768, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 512}
	path := writeSynth(t, storiesVocab(t), "f16", shape, 5)
	const ntok = 200 // several tiles and a partial one at every shape
	g, f := compileFor(t, path, ntok)
	e := load(t, d, g, f, ntok)
	matmuls := 0
	for _, n := range g.Nodes {
		if ops.MatMulWeights(n) == nil {
			continue
		}
		shader, _ := vulkan.MatMulShader(e, n.ID, ntok)
		t.Logf("%s %q at %d tokens: %s", n.Op, n.Name, ntok, shader)
		if shader == "matmul_cm2" {
			matmuls++
		}
	}
	if d.Info().CoopMatrix2F16() {
		require.GreaterOrEqual(t, matmuls, 4*shape.Layers, "QKV, attention output, gate·up and FFN down on cooperative matrix 2")
	}
	prefillMatchesCPU(t, e, path, shape, f, ntok)
}
