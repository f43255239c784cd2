package cpu_test

import (
	"testing"

	"github.com/weft-ml/weft/backends/backendtest"
	"github.com/weft-ml/weft/backends/cpu"
	"github.com/weft-ml/weft/ops"
)

// TestConformance runs the backend conformance suite on the CPU backend.
// The kernels that are specified to reproduce ops/ref bit for bit (the
// element-wise ones, the norms, softmax, RoPE and the lookups: see the
// SIMD package's element-wise notes and docs/decisions.md) must do so;
// matmuls and attention sum in another order than the reference and are
// held to the suite's bounds.
func TestConformance(t *testing.T) {
	backendtest.Run(t, cpu.Backend{}, backendtest.Options{
		// Dequantize is fused away by the passes (no CPU kernel); only a
		// 1-D F32 weight is bound as a broadcast row, so Supports refuses
		// a [1, D] weight operand of Mul or Add.
		Unsupported: []string{ops.Dequantize, ops.Mul + "/row2d", ops.Add + "/row2d"},
		Tolerances: backendtest.ExactFor(
			ops.GetRows, ops.SelectRows, ops.Copy,
			ops.Mul, ops.Add, ops.Scale,
			ops.SiLU, ops.GELU, ops.SwiGLU, ops.Softmax,
			ops.RMSNorm, ops.RMSNormMul, ops.LayerNorm, ops.LayerNormMul, ops.LayerNormMulAdd,
			ops.RoPE,
		),
		Threads: 3, // an odd split of rows and tiles
	})
}
