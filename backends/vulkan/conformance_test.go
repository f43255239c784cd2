//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"testing"

	"github.com/weft-ml/weft/backends/backendtest"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/ops"
)

// TestConformance runs the backend conformance suite on the Vulkan backend
// (through Backend.Load, so without the validation layer): every op and
// weight type Supports accepts must match ops/ref within the suite's
// bounds, and every case it refuses must be declared here.
func TestConformance(t *testing.T) {
	vulkantest.Open(t).Close() // skips without a device
	// Q4_0, F16 and Q4_1 take different activations (Q8_0, binary16, Q8_1).
	unsupported := []string{ops.MatMulQKV + "/Q4_0+F16+Q4_1"}
	// No shader for Dequantize: the passes fuse it away.
	unsupported = append(unsupported, ops.Dequantize)
	// RoPE's products are rounded separately (shaders/rope.glsl says why).
	backendtest.Run(t, vulkan.Backend{}, backendtest.Options{Unsupported: unsupported, UnfusedRoPE: true})
}
