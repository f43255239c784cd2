//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/reference"
	"github.com/weft-ml/weft/model/synth"
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
	shape := synth.Shape{Dim: 256, FFN: 768, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 512}
	path := writeSynth(t, storiesVocab(t), "q4_k_m", shape, 5)
	const ntok = 200 // several 64-token tiles, a partial 128-token one
	g, f := compileFor(t, path, ntok)
	e := load(t, d, g, f, ntok)
	gateUps := 0
	for _, n := range g.Nodes {
		if n.Op != ops.MatMulGateUpSwiGLU {
			continue
		}
		gateUps++
		require.Equal(t, gguf.TypeQ4_K, g.Nodes[ops.MatMulWeights(n)[0]].Type.DType, "the synth's gate·up weights")
		shader, pairs := vulkan.MatMulShader(e, n.ID, ntok)
		if d.Info().CoopF16() {
			assert.Equal(t, "matmul_coop", shader)
			assert.True(t, pairs, "Q4_K gate·up on binary16 tensor cores")
		}
		t.Logf("gate·up %q at %d tokens: %s, binary16 pairs %v", n.Name, ntok, shader, pairs)
	}
	require.Equal(t, shape.Layers, gateUps)

	prefillMatchesCPU(t, e, path, shape, f, ntok)
}

// prefillMatchesCPU runs an ntok-token prompt through e and through the CPU
// backend (llama.cpp's bits) and holds e's logits to the end-to-end rule:
// per row ‖Δ‖/‖cpu‖ within max(2e-3, 2s), s the CPU's own f16- against
// f32-KV spread; top-5 sets sharing at least 3 ids everywhere and 4 at
// 99% of rows.
func prefillMatchesCPU(t *testing.T, e backends.Program, path string, shape synth.Shape, f *gguf.File, ntok int) {
	t.Helper()
	host, err := backends.Lookup("cpu")
	require.NoError(t, err)
	cg, _ := compileRefusing(t, path, ntok, allOps)
	cp, err := host.Load(cg, f, backends.LoadOptions{MaxTokens: ntok})
	require.NoError(t, err)
	prompt := make([]int32, ntok)
	prompt[0] = 1
	for i, x := 1, uint32(12345); i < ntok; i++ {
		x = x*1664525 + 1013904223
		prompt[i] = int32(3 + x>>8%509)
	}
	run := func(p backends.Program, kv backends.KVType) []float32 {
		s, err := p.NewState(backends.StateOptions{Ctx: shape.Ctx, KVType: kv})
		require.NoError(t, err)
		if c, ok := s.(io.Closer); ok {
			defer c.Close()
		}
		out, err := s.Run(backends.Batch{Tokens: prompt, Positions: seq(0, ntok), Rows: seq(0, ntok)})
		require.NoError(t, err)
		return append([]float32(nil), out...)
	}
	cpu16, cpu32, gpu := run(cp, backends.KVF16), run(cp, backends.KVF32), run(e, backends.KVF16)
	v := shape.Vocab
	row := func(l []float32, i int) []float32 { return l[i*v : (i+1)*v] }
	spread := 0.0
	for i := range ntok {
		r, _ := reference.RelDiff(row(cpu16, i), row(cpu32, i))
		spread = max(spread, r)
	}
	bar := reference.Bar(spread)
	worst, min5, atLeast4 := 0.0, 5, 0
	for i := range ntok {
		r, _ := reference.RelDiff(row(gpu, i), row(cpu16, i))
		worst = max(worst, r)
		var top [][]float64
		for _, id := range reference.Top5(row(cpu16, i)) {
			top = append(top, []float64{float64(id), float64(row(cpu16, i)[id])})
		}
		o := reference.Overlap(reference.Top5(row(gpu, i)), top)
		min5 = min(min5, o)
		if o >= 4 {
			atLeast4++
		}
	}
	t.Logf("rows %d: worst ‖Δ‖/‖cpu‖ %.3g against a bar of %.3g (CPU KV spread %.3g); top-5 min %d, ≥4 at %d rows", ntok, worst, bar, spread, min5, atLeast4)
	assert.LessOrEqual(t, worst, bar, "‖Δ‖/‖cpu‖")
	assert.GreaterOrEqual(t, min5, 3, "top-5 overlap")
	assert.GreaterOrEqual(t, float64(atLeast4), 0.99*float64(ntok), "rows with top-5 overlap >= 4")
}

// An F16 model's prefill on cooperative matrix 2 (matmul_cm2.comp: its
// QKV, attention output, gate·up and FFN down where the device runs it;
// the NV tiles or the float tiles elsewhere) stays within the end-to-end
// rule of the CPU backend's logits.
func TestF16PrefillCoopMatrix2(t *testing.T) {
	d := vulkantest.Open(t)
	shape := synth.Shape{Dim: 256, FFN: 768, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 512}
	path := writeSynth(t, storiesVocab(t), "f16", shape, 5)
	const ntok = 200 // several tiles and a partial one at every shape
	g, f := compileFor(t, path, ntok)
	e := load(t, d, g, f, ntok)
	matmuls := 0
	for _, n := range g.Nodes {
		if ops.MatMulWeights(n) == nil {
			continue
		}
		shader, _ := vulkan.MatMulShader(e, n.ID, ntok)
		t.Logf("%s %q at %d tokens: %s", n.Op, n.Name, ntok, shader)
		if shader == "matmul_cm2" {
			matmuls++
		}
	}
	if d.Info().CoopMatrix2F16() {
		require.GreaterOrEqual(t, matmuls, 4*shape.Layers, "QKV, attention output, gate·up and FFN down on cooperative matrix 2")
	}
	prefillMatchesCPU(t, e, path, shape, f, ntok)
}
