//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/model/synth"
)

// The fused dispatches (RoPE·KV store, RMSNorm·w with Q8_K activations,
// QKV projections over packed weights) give the logits of the separate
// ones bit for bit, for prefill (40 tokens) and decode, binary16 and float32 caches,
// heads of 64 and 32, and save their dispatches and barriers in a decode
// step: three of each per layer for the RoPEs and the KV store (a decode
// step's attention does their work itself), one per layer where the
// gate·up writes the FFN down's Q8_0 or Q8_K activations, one where the
// attention writes its output projection's Q8_K, one per norm writing Q8_K
// (two a layer with K-quant weights, and the output norm before a Q6_K
// output), and two dispatches per packed QKV.
func TestFusedDispatchesBitIdentical(t *testing.T) {
	d := vulkantest.Open(t)
	vocab := storiesVocab(t)
	for _, c := range []struct {
		typ   string
		shape synth.Shape
		saved int // dispatches and barriers per decode step
	}{
		{"q4_0", synth.Shape{Dim: 256, FFN: 512, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 64}, 4*2 + 1},
		{"q4_k_m", synth.Shape{Dim: 256, FFN: 512, Layers: 2, Heads: 8, KVHeads: 8, Vocab: 512, Ctx: 64}, 3*2 + 4*2 + 1},
	} {
		t.Run(c.typ, func(t *testing.T) {
			g, f := synthFor(t, vocab, c.typ, c.shape, 5)
			defer vulkan.DisableNormFold()() // other numerics: TestFoldedNorms
			fused := load(t, d, g, f, 64)
			restore := vulkan.DisableFusion()
			plain := load(t, d, g, f, 64)
			restore()
			fusedDecode := 0 // a decode step's dispatches, fused, f16 cache
			for _, kv := range []backends.KVType{backends.KVF16, backends.KVF32} {
				prompt := scrambled(40) // 40 tokens: the tiled matmuls (packed QKV weights bound at their offsets)
				sf, got := promptThenDecode(t, fused, kv, 64, prompt, 4)
				sp, want := promptThenDecode(t, plain, kv, 64, prompt, 4)
				for i := range want {
					require.Equal(t, f32Bits(want[i]), f32Bits(got[i]), "kv %s, step %d: logits", kv, i)
				}
				df, bf := vulkan.StepCounts(sf, 1, 1)
				dp, bp := vulkan.StepCounts(sp, 1, 1)
				t.Logf("kv %s decode step: %d dispatches, %d barriers (separately: %d, %d); %d of %d QKV packed", kv, df, bf, dp, bp, vulkan.PackedQKV(fused), c.shape.Layers)
				assert.Equal(t, dp-c.saved-2*vulkan.PackedQKV(fused), df, "dispatches")
				assert.Equal(t, bp-c.saved, bf, "barriers")
				if kv == backends.KVF16 {
					fusedDecode = df
				}
			}
			// A session of one token at a time saves as many (the gate·up
			// still has room in the scratch for the down's activations).
			one := load(t, d, g, f, 1)
			s1, err := one.NewSession(backends.StateOptions{Ctx: 64, KVType: backends.KVF16})
			require.NoError(t, err)
			t.Cleanup(func() { s1.Close() })
			_, err = s1.Run(backends.Batch{Tokens: []int32{7}, Positions: []int32{0}, Rows: []int32{0}})
			require.NoError(t, err)
			d1, _ := vulkan.StepCounts(s1, 1, 1)
			assert.Equal(t, fusedDecode, d1, "decode dispatches with MaxTokens 1")
		})
	}
}

// scrambled is a prompt of n token ids below 512, spread over the vocabulary.
func scrambled(n int) []int32 {
	prompt := seq(1, n)
	for i := range prompt {
		prompt[i] = prompt[i] * 37 % 512
	}
	return prompt
}

// promptThenDecode runs prompt through a new session of e (a cache of ctx
// cells of kv), then steps decode steps of one token each, and returns
// the session (closed when the test ends) and every step's logits.
func promptThenDecode(t *testing.T, e *vulkan.Executable, kv backends.KVType, ctx int, prompt []int32, steps int) (*vulkan.Session, [][]float32) {
	t.Helper()
	s, err := e.NewSession(backends.StateOptions{Ctx: ctx, KVType: kv})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	lg, err := s.Run(backends.Batch{Tokens: prompt, Positions: seq(0, len(prompt)), Rows: seq(0, len(prompt))})
	require.NoError(t, err)
	out := [][]float32{append([]float32(nil), lg...)}
	for step := range steps {
		lg, err = s.Run(backends.Batch{Tokens: []int32{int32(7 + 50*step)}, Positions: []int32{int32(len(prompt) + step)}, Rows: []int32{0}})
		require.NoError(t, err)
		out = append(out, append([]float32(nil), lg...))
	}
	return s, out
}

func f32Bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}
