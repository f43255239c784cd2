//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/ops"
)

// An F16 model's prefill on cooperative matrix 2 (matmul_cm2.comp: its
// QKV, attention output, gate·up and FFN down where the device runs it,
// and its attention over the F16 cache, heads of 64, on attention_cm2.comp;
// the NV tiles or the float tiles elsewhere) stays within the end-to-end
// rule of the CPU backend's logits.
func TestF16PrefillCoopMatrix2(t *testing.T) {
	d := vulkantest.Open(t)
	const ntok = 200 // several tiles and a partial one at every shape
	m := newPrefillModel(t, d, "f16", ntok)
	matmuls := 0
	for _, n := range m.g.Nodes {
		if ops.MatMulWeights(n) == nil {
			continue
		}
		shader, _ := vulkan.MatMulShader(m.e, n.ID, ntok)
		t.Logf("%s %q at %d tokens: %s", n.Op, n.Name, ntok, shader)
		if shader == "matmul_cm2" {
			matmuls++
		}
	}
	if d.Info().CoopMatrix2F16() {
		require.GreaterOrEqual(t, matmuls, 4*m.shape.Layers, "QKV, attention output, gate·up and FFN down on cooperative matrix 2")
	}
	m.matchesCPU(t)
}
