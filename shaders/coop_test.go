//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
)

// The matmul_coop variants take their block sums from tensor cores, and
// integer sums are exact: their outputs must be matmul_tiled's, bit for
// bit, for every epilogue (TestMatMul checks matmul_tiled against ops/ref)
// — except the variants that decode their weights to binary16 (KQ_F16:
// Q4_K's gate·up), which TestMatMul holds to F16's bound instead.
func TestMatMulCoopSameBitsAsTiled(t *testing.T) {
	e := newEnv(t)
	if !e.d.Info().CoopInt8() {
		t.Skipf("%s has no int8 cooperative matrices (NVIDIA's VK_NV_cooperative_matrix): nothing to compare", e.d.Info().Name)
	}
	for _, wt := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		for _, c := range []struct{ rows, cols, ntok int }{{64, 256, 64}, {130, 512, 100}, {77, 2048, 33}} {
			rawW, _ := e.weights(wt, c.rows, c.cols)
			rawU, _ := e.weights(wt, c.rows, c.cols)
			x := e.random(c.ntok * c.cols)
			const doff, roff = 3, 7
			wb, ub := e.buf(len(rawW), rawW), e.buf(len(rawU), rawU)
			rb := e.place(roff, e.random(c.ntok*c.rows))
			xb, aoff := e.activations(wt, x, c.ntok, c.cols)
			g := e.rows((c.rows + 63) / 64)
			g[2] = uint32((c.ntok + 63) / 64)
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
					e.run(kern+epi+typeName(wt), g, push, e.withGrid(wt, bufs...)...)
					got[i] = e.readAt(db, doff, c.rows*c.ntok)
				}
				require.Equal(t, f32Bits(got[0]), f32Bits(got[1]), fmt.Sprintf("matmul_coop_%s%s %+v", epi, typeName(wt), c))
			}
		}
	}
}
