package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// refFlashKV returns a ref cache of type kt for n rows of width values.
func refFlashKV(n, width int, kt KVType) ref.KV {
	switch kt {
	case KVF16:
		return ref.KV{F16: make([]uint16, n*width), RowLen: width}
	case KVF32:
		return ref.KV{F32: make([]float32, n*width), RowLen: width}
	}
	t := kvElemType(kt)
	rb, _ := t.RowBytes(uint64(width))
	return ref.KV{Quant: make([]byte, n*int(rb)), QType: t, RowLen: width}
}

// flashCase is an attention problem for flash attention: c's random K,
// V and queries, stored into a flash cache and into ref caches.
type flashCase struct {
	*attnCase
	fast   *kvCache
	rk, rv ref.KV
	ctx    int
}

func newFlashCase(rng *rand.Rand, heads, kvHeads, hd, nTok, pos0 int, kt KVType) *flashCase {
	c := &flashCase{attnCase: newAttnCase(rng, heads, kvHeads, hd, nTok, pos0, kt), ctx: pos0 + nTok + 5}
	width := kvHeads * hd
	c.fast = newFlashKVCache(kvHeads, hd, c.ctx, kt)
	c.rk, c.rv = refFlashKV(c.ctx, width, kt), refFlashKV(c.ctx, width, kt)
	for p := range c.k {
		c.fast.store(p, c.k[p], c.v[p])
		c.rk.Store(p, c.k[p])
		c.rv.Store(p, c.v[p])
	}
	return c
}

// run computes the case with the flash kernel on threads workers (output
// poisoned first).
func (c *flashCase) run(threads int) []float32 {
	sh := c.sh
	got := make([]float32, len(c.q))
	for i := range got {
		got[i] = float32(math.NaN())
	}
	c.fast.attend(got, c.q, c.nTok, c.pos0, sh, newAttnBufs(threads, sh.heads/sh.kvHeads, sh.headDim, c.ctx, true))
	return got
}

// refWith computes the case with ref.FlashAttentionWith: the fast
// kernel's own score dot products (flashScore) when fastDots, else ggml's.
func (c *flashCase) refWith(fastDots bool) []float32 {
	sh := c.sh
	dot := ref.GGMLFlashDot
	if fastDots {
		q16 := make([]byte, 2*sh.headDim)
		dot = func(_ ref.KV, pos, off int, q ref.FlashQuery) float32 {
			qb := q.Q8
			if q.Half != nil {
				quant.FP32ToFP16Row(q.Half, q16) // exact: already binary16 values
				qb = q16
			}
			return c.fast.flashScore(pos, off/sh.headDim, qb)
		}
	}
	want := make([]float32, len(c.q))
	o := ref.AttnOptions{Window: sh.window, SoftCap: sh.softCap, F32Acc: c.fast.f32Acc}
	ref.FlashAttentionWith(want, c.q, c.rk, c.rv, c.nTok, c.pos0, sh.heads, sh.kvHeads, sh.headDim, sh.scale, o, dot, ref.NewFlashScratch(sh.headDim))
	return want
}

// TestFlashMatchesRef holds the CPU flash kernel to ref.FlashAttention on
// random inputs of awkward sizes, GQA, windows and soft-capping: bit for
// bit when the reference takes the kernel's score dot products (the only
// freedom it has: everything after the scores, the binary16 accumulator
// above all, must be llama.cpp's arithmetic), and within a loose bound
// of the reference with ggml's own dot products (the summation order of
// a score moves a binary16 rounding now and then).
func TestFlashMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	type shape struct{ nTok, pos0 int }
	shapes := []shape{{1, 0}, {1, 37}, {5, 3}, {9, 200}, {3, 700}, {1, 1500}, {21, 107}}
	for _, kt := range []KVType{KVF16, backends.KVQ8_0, backends.KVQ4_0} {
		for _, hd := range []int{8, 64, 96, 128} {
			if kt != KVF16 && hd%32 != 0 {
				continue
			}
			for _, group := range []int{1, 4} {
				for i, s := range shapes {
					kvHeads := 1 + (i+group)%2
					c := newFlashCase(rng, kvHeads*group, kvHeads, hd, s.nTok, s.pos0, kt)
					if i%2 == 1 {
						c.sh.window = 5 + 7*i
					}
					if i%3 == 2 {
						c.sh.softCap = 1.5
					}
					name := fmt.Sprintf("%s/hd%d/gqa%d/tok%d@%d/window%d/cap%g", kt, hd, group, s.nTok, s.pos0, c.sh.window, c.sh.softCap)
					t.Run(name, func(t *testing.T) {
						got := c.run(3)
						exact := c.refWith(true)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(exact[i]) {
								t.Fatalf("element %d: flash kernel %g, ref with the same scores %g", i, got[i], exact[i])
							}
						}
						ggml := c.refWith(false)
						worst := 0.0
						for i := range got {
							worst = max(worst, math.Abs(float64(got[i]-ggml[i])))
						}
						// Outputs are averages of values within ±4: a
						// wrong score or row shows at 0.1 and more.
						require.Less(t, worst, 0.02, "against ggml's dot products")
					})
				}
			}
		}
	}
}

// TestFlashF32AccMatchesRef holds the float32 accumulator of an f16
// cache (StateOptions.FlashF32Acc) to ref.FlashAttention with
// AttnOptions.F32Acc bit for bit (the kernel's score dot products), on
// head sizes with and without a tail past the 64-value blocks, GQA,
// windows, several tokens; and checks that it is not the binary16
// accumulator's result (the option must reach the kernels).
func TestFlashF32AccMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	shapes := []struct{ nTok, pos0 int }{{1, 0}, {1, 300}, {21, 107}, {3, 700}}
	for _, hd := range []int{8, 64, 80, 128} {
		for i, s := range shapes {
			c := newFlashCase(rng, 8, 2, hd, s.nTok, s.pos0, KVF16)
			if i == 3 {
				c.sh.window = 50
			}
			half := c.run(2)
			c.fast.f32Acc = true
			got, want := c.run(2), c.refWith(true)
			differs := false
			for k := range got {
				require.Equal(t, math.Float32bits(want[k]), math.Float32bits(got[k]), "hd %d, %d tokens at %d: element %d", hd, s.nTok, s.pos0, k)
				differs = differs || got[k] != half[k]
			}
			if s.pos0 >= 300 {
				require.True(t, differs, "hd %d at %d: the float32 accumulator gave the binary16 one's bits", hd, s.pos0)
			}
		}
	}
}

// TestFlashThreadsAgree checks that every split of the work gives the
// same bits, and that decode (one token) and prefill agree.
func TestFlashThreadsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, kt := range []KVType{KVF16, backends.KVQ8_0} {
		c := newFlashCase(rng, 16, 2, 64, 6, 100, kt)
		one := c.run(1)
		for _, threads := range []int{2, 3, 7, 32} {
			got := c.run(threads)
			for i := range got {
				require.Equal(t, math.Float32bits(one[i]), math.Float32bits(got[i]), "%s: %d threads, element %d", kt, threads, i)
			}
		}
		// The last token alone, as decode computes it.
		w := c.sh.heads * c.sh.headDim
		last := make([]float32, w)
		c.fast.attend(last, c.q[5*w:], 1, c.pos0+5, c.sh, newAttnBufs(2, 8, 64, c.ctx, true))
		for i := range last {
			require.Equal(t, math.Float32bits(one[5*w+i]), math.Float32bits(last[i]), "%s: decode element %d", kt, i)
		}
	}
}

// TestFlashSeqs runs a batch of two sequences' tokens through one
// attnJob: each token must get what its sequence alone gives.
func TestFlashSeqs(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	a := newFlashCase(rng, 8, 2, 32, 3, 20, backends.KVQ4_0)
	b := newFlashCase(rng, 8, 2, 32, 2, 7, backends.KVQ4_0)
	wantA, wantB := a.run(1), b.run(1)
	w := 8 * 32
	q := append(append([]float32{}, b.q[:w]...), a.q...) // b's first token, then a's three
	q = append(q, b.q[w:]...)
	seqs := []int32{1, 0, 0, 0, 1}
	pos := []int32{7, 20, 21, 22, 8}
	out := make([]float32, len(q))
	j := attnJob{caches: []*kvCache{a.fast, b.fast}, seqs: seqs, pos: pos, out: out, q: q, nTok: 5, sh: a.sh, bufs: newAttnBufs(3, 4, 32, 40, true)}
	j.attend()
	want := append(append(append([]float32{}, wantB[:w]...), wantA...), wantB[w:]...)
	for i := range out {
		require.Equal(t, math.Float32bits(want[i]), math.Float32bits(out[i]), "element %d", i)
	}
}

// TestFlashRefusals checks the cache types flash attention refuses.
func TestFlashRefusals(t *testing.T) {
	require.ErrorContains(t, checkFlash(backends.KVQ8_0, 48), "blocks of 32")
	require.NoError(t, checkFlash(KVF16, 8))
	require.ErrorContains(t, backends.CheckKV(backends.KVQ4_0, false), "needs flash attention")
	require.ErrorContains(t, backends.CheckKV(KVF32, true), "not f32")
	require.NoError(t, backends.CheckKV(backends.KVQ8_0, true))
	require.NoError(t, backends.CheckKV(KVF16, true))
	require.Equal(t, gguf.TypeQ4_0, kvElemType(backends.KVQ4_0))
	require.ErrorContains(t, backends.CheckFlashAcc(backends.StateOptions{FlashF32Acc: true}), "add --flash-attn")
	require.NoError(t, backends.CheckFlashAcc(backends.StateOptions{FlashF32Acc: true, FlashAttn: true}))
}

// TestFlashTileWholeChunks: the binary16 score kernels write and read
// whole simd.FlashScoreChunk cells from a tile's start, so a tile (and
// the K allocation, rounded to tiles) must be whole chunks.
func TestFlashTileWholeChunks(t *testing.T) {
	require.Zero(t, flashTile%simd.FlashScoreChunk)
	require.Zero(t, flashTile%4)
	require.Equal(t, 128, flashKCells(65, KVF16))
	require.Equal(t, 65, flashKCells(65, backends.KVQ8_0))
}
