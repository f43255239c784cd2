package runtime

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/model/synth"
)

// A plan for the Vulkan backend whose attention heads (512 values) are
// wider than its attention shader takes runs attention on the CPU: the
// plan file holds both backends' nodes, the model loads on both, and its
// logits and greedy tokens are the CPU-only model's.
func TestPlanSplitAcrossBackends(t *testing.T) {
	skipWithoutVulkanDevice(t)
	dir := t.TempDir()
	model := writeWideModel(t, dir)

	plan := filepath.Join(dir, "wide.plan")
	p, err := CompileTo(model, plan, CompileOptions{Ctx: 128, Backend: "vulkan"})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	gpu, err := Open(plan, Options{Backend: "vulkan"})
	require.NoError(t, err)
	defer gpu.Close()
	require.Len(t, gpu.BackendNotes, 1)
	assert.Contains(t, gpu.BackendNotes[0], "splits on vulkan and cpu; off vulkan, e.g. Attention")
	host, err := Open(model, Options{})
	require.NoError(t, err)
	defer host.Close()

	prompt := []int32{1, 400, 52, 9, 300}
	sg, err := gpu.NewSession(SessionOptions{})
	require.NoError(t, err)
	sh, err := host.NewSession(SessionOptions{})
	require.NoError(t, err)
	lg, err := sg.Eval(prompt, true)
	require.NoError(t, err)
	lh, err := sh.Eval(prompt, true)
	require.NoError(t, err)
	require.Len(t, lg, len(lh))
	assert.Less(t, relDiff(lg, lh), 1e-3, "prompt logits, Vulkan+CPU against CPU")
	v := gpu.VocabSize()
	for step := 0; step < 8; step++ {
		a, b := argmax(lg[len(lg)-v:]), argmax(lh[len(lh)-v:])
		require.Equal(t, b, a, "greedy step %d", step)
		if lg, err = sg.Step(int32(a)); err != nil {
			t.Fatal(err)
		}
		if lh, err = sh.Step(int32(b)); err != nil {
			t.Fatal(err)
		}
		assert.Less(t, relDiff(lg, lh), 1e-3, "step %d logits", step)
	}
	// A context shift reaches the backend holding the KV cache (the CPU,
	// whose attention reads keys a RoPE on Vulkan rotated).
	for _, s := range []*Session{sg, sh} {
		n, err := s.Shift(2)
		require.NoError(t, err)
		require.Equal(t, 5, n)
	}
	for step := 0; step < 4; step++ {
		a, b := argmax(lg[len(lg)-v:]), argmax(lh[len(lh)-v:])
		require.Equal(t, b, a, "greedy step %d after the shift", step)
		if lg, err = sg.Step(int32(a)); err != nil {
			t.Fatal(err)
		}
		if lh, err = sh.Step(int32(b)); err != nil {
			t.Fatal(err)
		}
		assert.Less(t, relDiff(lg, lh), 1e-3, "step %d logits after the shift", step)
	}
}

func relDiff(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		d := float64(a[i] - b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// writeWideModel writes the Q8_0 model whose attention heads (512 values)
// are wider than the Vulkan attention shader takes, into dir.
func writeWideModel(t *testing.T, dir string) string {
	t.Helper()
	vocab, err := gguf.Open(stories(t))
	require.NoError(t, err)
	defer vocab.Close()
	ft, err := synth.ParseFileType("q8_0")
	require.NoError(t, err)
	model := filepath.Join(dir, "wide.gguf")
	shape := synth.Shape{Dim: 512, FFN: 256, Layers: 2, Heads: 1, KVHeads: 1, Vocab: 512, Ctx: 256}
	require.NoError(t, synth.WriteFile(model, synth.Options{Shape: shape, Type: ft, Seed: 7, Vocab: vocab}))
	return model
}
