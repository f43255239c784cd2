//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// BenchmarkMatMulTiled times one prefill matmul of TinyLlama's shapes
// (512 tokens) per weight type and epilogue, the dispatch recorded once
// and run b.N times (each run a submit and a wait): the kernels alone, for
// comparing with a model step's profile.
func BenchmarkMatMulTiled(b *testing.B) {
	e := newEnv(b)
	const ntok = 512
	for _, wt := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeF16} {
		// TinyLlama's gate·up, FFN down, attention output and QKV.
		for _, c := range []struct {
			epi        string
			rows, cols int
		}{{"gateup_", 5632, 2048}, {"add_", 2048, 5632}, {"add_", 2048, 2048}, {"", 2560, 2048}} {
			// matmul_tiled, matmul_coop, and matmul_cm2 in each tile shape
			// (its name's suffix).
			kerns := append([]string{"matmul_tiled_", "matmul_coop_"}, e.cm2Kernels(wt)...)
			for _, kern := range kerns {
				name, tr, tt := kern+c.epi+typeName(wt), 64, 64
				if suffix, ok := strings.CutPrefix(kern, "matmul_cm2"); ok {
					kern, name = "matmul_cm2_", "matmul_cm2_"+c.epi+typeName(wt)+suffix
					tr, tt = cm2Tile(b, name)
				}
				if kern == "matmul_coop_" && !e.coop(wt) {
					continue
				}
				b.Run(fmt.Sprintf("%s_%dx%d", name, c.rows, c.cols), func(b *testing.B) {
					rawW, _ := e.weights(wt, c.rows, c.cols)
					wb := e.buf(len(rawW), rawW)
					at := wt // the activations' type: binary16 pairs where the kernel decodes to binary16
					if kern == "matmul_coop_" && decodesToBinary16(b, name) {
						at = gguf.TypeF16
					}
					xb, aoff := e.activationsFor(kern, at, e.random(ntok*c.cols), ntok, c.cols)
					db, ob := e.out(c.rows*ntok), e.out(c.rows*ntok)
					bufs := []*vulkan.Buffer{wb, xb, db}
					if c.epi != "" {
						bufs = append(bufs, map[string]*vulkan.Buffer{"gateup_": wb, "add_": ob}[c.epi])
					}
					g := e.rows((c.rows + tr - 1) / tr)
					g[2] = uint32((ntok + tt - 1) / tt)
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

// BenchmarkAttentionCoop times prefill attention on tensor cores
// (attention_coop.comp, and attention_cm2.comp on cooperative matrix 2) for
// TinyLlama's heads (32 query heads, 4 KV heads of 64; the _hd64 variants)
// and Llama 3 8B's (32 query heads, 8 KV heads of 128) over a prompt of
// 512 and 2048 tokens from an empty cache, the dispatch recorded once and
// run b.N times: the kernel alone (a model step's profile shows it per
// layer). Variants can be timed without a Go toolchain through
// WEFT_SHADER_MUTANTS, as the tests' mutants are.
func BenchmarkAttentionCoop(b *testing.B) {
	e := newEnv(b)
	const heads = 32
	for _, k := range []struct {
		name        string
		kvHeads, hd int
	}{{"attention_coop_hd64_f16", 4, 64}, {"attention_coop_f16", 8, 128}, {"attention_cm2_hd64_f16", 4, 64}, {"attention_cm2_hd64_w128_f16", 4, 64}, {"attention_cm2_hd64_k64_f16", 4, 64}, {"attention_cm2_hd128_f16", 8, 128}, {"attention_cm2_hd128_k64_f16", 8, 128}} {
		name, kvHeads, hd := k.name, k.kvHeads, k.hd
		if !e.runs(name) {
			b.Logf("%s does not run here (no binary16 cooperative matrices, or not cooperative matrix 2)", name)
			continue
		}
		tq := 64
		if t, ok := mustLookup(b, name).DefineInt("AT_TQ"); ok {
			tq = t
		}
		for _, ntok := range []int{512, 2048} {
			b.Run(fmt.Sprintf("%s_%d", name, ntok), func(b *testing.B) {
				w := kvHeads * hd
				kc, err := quant.QuantizeAlloc(gguf.TypeF16, e.random(ntok*w))
				require.NoError(b, err)
				vc, err := quant.QuantizeAlloc(gguf.TypeF16, e.random(ntok*w))
				require.NoError(b, err)
				pos := make([]uint32, 2*ntok) // positions, then cells (all 0)
				for i := range ntok {
					pos[i] = uint32(i)
				}
				const qoff, ooff, posoff = 0, 0, 0
				qb, ob := e.place(qoff, e.random(ntok*heads*hd)), e.out(ntok*heads*hd)
				sb := e.words(pos, posoff)
				kb, vb := e.buf(len(kc), kc), e.buf(len(vc), vc)
				p, err := e.d.NewProgram()
				require.NoError(b, err)
				defer p.Close()
				push := pushWords(heads, kvHeads, hd, ntok, qoff, ooff, posoff, float32(0.125), 0, ntok, 0, float32(0), float32(0))
				grid := [3]uint32{heads, uint32((ntok + tq - 1) / tq), 1}
				require.NoError(b, p.Dispatch(e.kernel(name), grid, push, vulkan.Whole(qb), vulkan.Whole(sb), vulkan.Whole(kb), vulkan.Whole(vb), vulkan.Whole(ob)))
				require.NoError(b, p.End())
				require.NoError(b, p.Run()) // warm-up
				b.ResetTimer()
				for range b.N {
					require.NoError(b, p.Run())
				}
				flops := 4 * float64(heads*hd) * float64(ntok) * float64(ntok+1) / 2 // causal QKᵀ and P·V
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
			})
		}
	}
}
