package passes_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/ops"
)

// TestOptimisedArchLogitsMatchO0 is TestOptimisedLogitsMatchO0 for the
// architecture fixtures of ../shared/models-arch: the fused graph (bias
// adds in the matmuls, GELU-gated feed-forwards, LayerNorm·w+b, QKV
// through the biases) gives the -O0 logits bit for bit, and the fusions
// the architectures call for happen.
func TestOptimisedArchLogitsMatchO0(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every architecture fixture twice: skipped in -short mode")
	}
	refDir := testenv.Shared(t, "reference-arch")
	modelDir := testenv.Shared(t, "models-arch")
	// Matmul-family and norm nodes per model (2 layers each): only the
	// output projection stays a plain MatMul where it has no bias.
	want := map[string]map[string]int{
		"synth-qwen2-f32":  {ops.MatMulQKV: 2, ops.MatMulGateUpSwiGLU: 2, ops.MatMulAdd: 4, ops.RMSNormMul: 5, ops.MatMul: 1},
		"synth-phi2-f32":   {ops.MatMulQKV: 2, ops.MatMulBias: 2*3 + 1, ops.LayerNormMulAdd: 3},
		"synth-gemma-f32":  {ops.MatMulQKV: 2, ops.MatMulGateUpGeGLU: 2, ops.MatMulAdd: 4, ops.RMSNormMul: 5, ops.MatMul: 1},
		"synth-llama3-f32": {ops.MatMulQKV: 2, ops.MatMulGateUpSwiGLU: 2, ops.MatMulAdd: 4, ops.RMSNormMul: 5, ops.MatMul: 1},
	}
	for name, fused := range want {
		t.Run(name, func(t *testing.T) {
			m := compareModel(t, filepath.Join(modelDir, name+".gguf"), name, refDir, []string{"p1", "p2"})
			counts := map[string]int{}
			for _, n := range m.Plan.Graph.Nodes {
				counts[n.Op]++
			}
			for op, n := range fused {
				assert.Equal(t, n, counts[op], "%s nodes", op)
			}
			for op, n := range counts {
				if !strings.HasPrefix(op, "MatMul") || fused[op] > 0 {
					continue
				}
				assert.Zero(t, n, "unexpected %s nodes", op)
			}
		})
	}
}
