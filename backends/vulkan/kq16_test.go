//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops"
)

// A Q4_K_M model's prefill, whose Q4_K gate·up takes binary16 tensor
// cores where the device has them (KQ_F16: the weights decoded to
// binary16, binary16 activations, not the CPU's Q8_K ones), stays within
// the end-to-end rule of the CPU backend's logits (llama.cpp's bits): per
// row ‖Δ‖/‖cpu‖ within max(2e-3, 2s), s the CPU's own f16- against
// f32-KV spread; top-5 sets sharing at least 3 ids everywhere and 4 at
// 99% of rows. Devices without binary16 tensor cores run the int8 or
// sdot4 tiles here: the same rule.
func TestQ4KGateUpBinary16(t *testing.T) {
	d := vulkantest.Open(t)
	const ntok = 200 // several 64-token tiles, a partial 128-token one
	m := newPrefillModel(t, d, "q4_k_m", ntok)
	g := m.g
	gateUps := 0
	for _, n := range g.Nodes {
		if n.Op != ops.MatMulGateUpSwiGLU {
			continue
		}
		gateUps++
		require.Equal(t, gguf.TypeQ4_K, g.Nodes[ops.MatMulWeights(n)[0]].Type.DType, "the synth's gate·up weights")
		shader, pairs := vulkan.MatMulShader(m.e, n.ID, ntok)
		if d.Info().CoopF16() {
			assert.Equal(t, "matmul_coop", shader)
			assert.True(t, pairs, "Q4_K gate·up on binary16 tensor cores")
		}
		t.Logf("gate·up %q at %d tokens: %s, binary16 pairs %v", n.Name, ntok, shader, pairs)
	}
	require.Equal(t, m.shape.Layers, gateUps)

	m.matchesCPU(t)
}
