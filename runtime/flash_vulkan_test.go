package runtime

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flash attention over q8_0/q4_0 caches on Vulkan with several sequences:
// a slot continued from another slot's copied prefix (quantized rows
// copied on the device, read at other cells) gives the very logits of
// computing the prefix itself; a context shift of a quantized cache is
// refused with a message naming the way out, and of a flash f16 cache
// (the layout of the plain f16 one) it runs.
func TestFlashVulkanSlotsAndShift(t *testing.T) {
	skipWithoutVulkanDevice(t)
	path := filepath.Join("..", "testdata", "quants", "synth-256-iq4_xs.gguf")
	m, err := Open(path, Options{Backend: "vulkan", Compile: CompileOptions{Backend: "vulkan"}})
	require.NoError(t, err)
	defer m.Close()
	p := encodeAll(t, m, []string{"Lily and Ben went to the park. They saw a big dog."})[0]
	const k = 9
	ctx := context.Background()
	for _, kv := range []string{"q8_0", "q4_0"} {
		b, err := m.NewBatcher(BatcherOptions{Slots: 2, SlotCtx: 64, KVType: kv, FlashAttn: true})
		require.NoError(t, err)
		_, err = b.Step(ctx, []SeqInput{{Slot: 0, Tokens: p[:k]}, {Slot: 1, Tokens: []int32{1, 7, 9}}})
		require.NoError(t, err)
		want, err := b.Step(ctx, []SeqInput{{Slot: 0, Tokens: p[k:], Logits: true}})
		require.NoError(t, err)
		require.NoError(t, b.CopyPrefix(1, 0, k))
		got, err := b.Step(ctx, []SeqInput{{Slot: 1, Tokens: p[k:], Logits: true}})
		require.NoError(t, err)
		assert.Equal(t, want[0], got[0], kv)
		require.NoError(t, b.Close())

		s, err := m.NewSession(SessionOptions{Ctx: 32, KVType: kv, FlashAttn: true})
		require.NoError(t, err)
		_, err = s.Eval(p[:16], false)
		require.NoError(t, err)
		_, err = s.Shift(2)
		require.ErrorContains(t, err, "vulkan: a context shift of a "+kv+" KV cache is not implemented (use --kv-type f16)")
		require.Equal(t, 16, s.Pos(), "a refused shift leaves the session as it was")
		require.NoError(t, s.Close())
	}
	// The float32 accumulator is the CPU's: refused with an f16 cache, a
	// no-op with a quantized one (float32 already, llama.cpp's rule).
	_, err = m.NewSession(SessionOptions{Ctx: 32, FlashAttn: true, FlashAcc: "f32"})
	require.ErrorContains(t, err, "use --backend cpu")
	q, err := m.NewSession(SessionOptions{Ctx: 32, KVType: "q8_0", FlashAttn: true, FlashAcc: "f32"})
	require.NoError(t, err)
	require.NoError(t, q.Close())
	s, err := m.NewSession(SessionOptions{Ctx: 32, FlashAttn: true})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Eval(p[:16], false)
	require.NoError(t, err)
	n, err := s.Shift(2)
	require.NoError(t, err)
	require.Equal(t, 7, n)
	_, err = s.Step(p[16])
	require.NoError(t, err)
}
