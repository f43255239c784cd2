//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/model/synth"
)

// A step that polls its fence (WEFT_VULKAN_SPIN_US) returns the logits of
// one that blocks at once, bit for bit: it must not read them before the
// step has finished. The poll is long enough (a second) to see every
// step end while polling.
func TestSpinWaitSameLogits(t *testing.T) {
	d := vulkantest.Open(t)
	vocab := storiesVocab(t)
	g, f := synthFor(t, vocab, "q4_0", synth.Shape{Dim: 256, FFN: 512, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 64}, 9)
	e := load(t, d, g, f, 64)
	run := func() [][]float32 {
		s, err := e.NewSession(backends.StateOptions{Ctx: 64})
		require.NoError(t, err)
		defer s.Close()
		prompt := seq(3, 20)
		lg, err := s.Run(backends.Batch{Tokens: prompt, Positions: seq(0, len(prompt)), Rows: []int32{int32(len(prompt) - 1)}})
		require.NoError(t, err)
		out := [][]float32{append([]float32(nil), lg...)}
		for step := range 4 {
			lg, err = s.Run(backends.Batch{Tokens: []int32{int32(11 + 40*step)}, Positions: []int32{int32(len(prompt) + step)}, Rows: []int32{0}})
			require.NoError(t, err)
			out = append(out, append([]float32(nil), lg...))
		}
		return out
	}
	defer vulkan.SetSpinWait(d, 0)()
	blocking := run()
	vulkan.SetSpinWait(d, time.Second)
	polling := run()
	for i := range blocking {
		require.Equal(t, f32Bits(blocking[i]), f32Bits(polling[i]), "step %d", i)
	}
}
