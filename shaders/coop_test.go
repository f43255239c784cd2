//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/shaders"
)

// The matmul_coop variants take their block sums from tensor cores, and
// integer sums are exact: their outputs must be matmul_tiled's, bit for
// bit, for every epilogue (TestMatMul checks matmul_tiled against ops/ref)
// — except the variants that decode their weights to binary16 (KQ_F16:
// Q4_K's gate·up), which TestMatMul holds to F16's bound instead. Each
// kernel runs on its own tile (Q_TR rows × Q_TT tokens where shadergen
// gives them, as the host reads them). The gate·ups that also write the
// FFN down's activations (matmul_coop_gateup_T_q8_0, _q8_1) write the
// same values, and the bits quantize_q8_0/q8_1 gives them.
func TestMatMulCoopSameBitsAsTiled(t *testing.T) {
	e := newEnv(t)
	if !e.d.Info().CoopInt8() {
		t.Skipf("%s has no int8 cooperative matrices (NVIDIA's VK_NV_cooperative_matrix): nothing to compare", e.d.Info().Name)
	}
	for _, wt := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		for _, c := range []struct{ rows, cols, ntok int }{{64, 256, 64}, {130, 512, 100}, {77, 2048, 33}, {96, 256, 300}} {
			rawW, _ := e.weights(wt, c.rows, c.cols)
			rawU, _ := e.weights(wt, c.rows, c.cols)
			x := e.random(c.ntok * c.cols)
			const doff, roff = 3, 7
			wb, ub := e.buf(len(rawW), rawW), e.buf(len(rawU), rawU)
			rb := e.place(roff, e.random(c.ntok*c.rows))
			xb, aoff := e.activations(wt, x, c.ntok, c.cols)
			push := pushWords(c.cols, c.rows, c.ntok, aoff, doff, roff, c.rows)
			for _, epi := range []string{"", "add_", "gateup_"} {
				if decodesToBinary16(t, "matmul_coop_"+epi+typeName(wt)) {
					continue
				}
				var got [2][]float32
				for i, kern := range []string{"matmul_tiled_", "matmul_coop_"} {
					db := e.out(doff + c.rows*c.ntok + 4)
					bufs := []*vulkan.Buffer{wb, xb, db}
					switch epi {
					case "add_":
						bufs = append(bufs, rb)
					case "gateup_":
						bufs = append(bufs, ub)
					}
					e.run(kern+epi+typeName(wt), e.tileGrid(kern+epi+typeName(wt), c.rows, c.ntok), push, e.withGrid(wt, bufs...)...)
					got[i] = e.readAt(db, doff, c.rows*c.ntok)
				}
				name := "matmul_coop_" + epi + typeName(wt)
				require.Equal(t, f32Bits(got[0]), f32Bits(got[1]), fmt.Sprintf("%s %+v", name, c))
				if _, err := shaders.Lookup(name + "_q8_0"); err == nil && c.rows%32 == 0 {
					e.gateUpWithDownActivations(name, c.rows, c.ntok, got[0], []*vulkan.Buffer{wb, xb, nil, ub}, push)
				}
			}
		}
	}
}

// tileGrid is the dispatch of kernel kern over rows × ntok: a workgroup
// per tile of Q_TR rows × Q_TT tokens (64 × 64 where the variant does not
// say; the two-weight tensor-core tiles' 128 tokens are covered by twice
// as many 64-token workgroups, whose overlap writes the same values).
func (e *env) tileGrid(kern string, rows, ntok int) [3]uint32 {
	k, err := shaders.Lookup(kern)
	require.NoError(e.t, err)
	tr, ok := k.DefineInt("Q_TR")
	if !ok {
		tr = 64
	}
	tt, ok := k.DefineInt("Q_TT")
	if !ok {
		tt = 64
	}
	g := e.rows((rows + tr - 1) / tr)
	g[2] = uint32((ntok + tt - 1) / tt)
	return g
}
