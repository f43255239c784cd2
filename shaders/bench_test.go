//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
)

// BenchmarkMatMulTiled times one prefill matmul of TinyLlama's FFN shapes
// (512 tokens) per weight type and epilogue, the dispatch recorded once
// and run b.N times (each run a submit and a wait): the kernels alone, for
// comparing with a model step's profile.
func BenchmarkMatMulTiled(b *testing.B) {
	e := newEnv(b)
	const ntok = 512
	for _, wt := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeF16} {
		for _, c := range []struct {
			epi        string
			rows, cols int
		}{{"gateup_", 5632, 2048}, {"add_", 2048, 5632}, {"", 5632, 2048}} {
			for _, kern := range []string{"matmul_tiled_", "matmul_coop_"} {
				name := kern + c.epi + typeName(wt)
				if kern == "matmul_coop_" && !e.coop(wt) {
					continue
				}
				b.Run(fmt.Sprintf("%s_%dx%d", name, c.rows, c.cols), func(b *testing.B) {
					rawW, _ := e.weights(wt, c.rows, c.cols)
					wb := e.buf(len(rawW), rawW)
					xb, aoff := e.activationsFor(kern, wt, e.random(ntok*c.cols), ntok, c.cols)
					db, ob := e.out(c.rows*ntok), e.out(c.rows*ntok)
					bufs := []*vulkan.Buffer{wb, xb, db}
					if c.epi != "" {
						bufs = append(bufs, map[string]*vulkan.Buffer{"gateup_": wb, "add_": ob}[c.epi])
					}
					g := e.rows((c.rows + 63) / 64)
					g[2] = (ntok + 63) / 64
					p, err := e.d.NewProgram()
					require.NoError(b, err)
					defer p.Close()
					rs := make([]vulkan.Range, len(bufs))
					for i, buf := range bufs {
						rs[i] = vulkan.Whole(buf)
					}
					require.NoError(b, p.Dispatch(e.kernel(name), g, pushWords(c.cols, c.rows, ntok, aoff, 0, 0, c.rows), rs...))
					require.NoError(b, p.End())
					require.NoError(b, p.Run()) // warm-up
					b.ResetTimer()
					for range b.N {
						require.NoError(b, p.Run())
					}
					nw := 1.0
					if c.epi == "gateup_" {
						nw = 2
					}
					b.ReportMetric(2*nw*float64(c.rows*c.cols*ntok)*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
				})
			}
		}
	}
}
