package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// attnCase is one attention problem: a cache filled with random K and V
// up to pos0+nTok and random queries for the last nTok positions.
type attnCase struct {
	sh         attnShape
	nTok, pos0 int
	kvType     KVType
	q          []float32   // [nTok][heads·headDim]
	k, v       [][]float32 // [position][kvHeads·headDim], as stored (rounded for F16)
}

func newAttnCase(rng *rand.Rand, heads, kvHeads, hd, nTok, pos0 int, kt KVType) *attnCase {
	c := &attnCase{sh: attnShape{heads: heads, kvHeads: kvHeads, headDim: hd, scale: float32(1 / math.Sqrt(float64(hd)))}, nTok: nTok, pos0: pos0, kvType: kt}
	c.q = randVec(rng, nTok*heads*hd, 1)
	for range pos0 + nTok {
		// Keys scaled so that scores spread over a few units: the softmax
		// is neither flat nor one-hot.
		c.k = append(c.k, randVec(rng, kvHeads*hd, 1.5))
		c.v = append(c.v, randVec(rng, kvHeads*hd, 1))
	}
	return c
}

func randVec(rng *rand.Rand, n int, sd float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * sd)
	}
	return x
}

// fill stores the case's K and V into both caches, the way runAttention
// appends batches (runs of 1, 2, … 19 positions), and rounds c.k and c.v
// to what the cache holds.
func (c *attnCase) fill(fast *kvCache, rk, rv ref.KV) {
	scratch := make([]byte, vBlockBytes)
	for p, n := 0, 1; p < len(c.k); p, n = p+n, n%19+1 {
		n = min(n, len(c.k)-p)
		fast.storeRun(p, slices.Concat(c.k[p:p+n]...), slices.Concat(c.v[p:p+n]...), n, scratch)
	}
	for p := range c.k {
		rk.Store(p, c.k[p])
		rv.Store(p, c.v[p])
		if c.kvType == KVF16 {
			roundHalves(c.k[p])
			roundHalves(c.v[p])
		}
	}
}

func roundHalves(x []float32) {
	for i, v := range x {
		x[i] = quant.FP16ToFP32(quant.FP32ToFP16(v))
	}
}

func refKV(n, width int, kt KVType) ref.KV {
	if kt == KVF16 {
		return ref.KV{F16: make([]uint16, n*width), RowLen: width}
	}
	return ref.KV{F32: make([]float32, n*width), RowLen: width}
}

// run computes the case with kvCache.attend on threads workers (output
// poisoned first) and with ref.Attention.
func (c *attnCase) run(threads int) (got, want []float32) {
	sh, ctx := c.sh, c.pos0+c.nTok+5
	width := sh.kvHeads * sh.headDim
	fast := newKVCache(sh.kvHeads, sh.headDim, ctx, c.kvType)
	rk, rv := refKV(ctx, width, c.kvType), refKV(ctx, width, c.kvType)
	c.fill(fast, rk, rv)
	got = make([]float32, len(c.q))
	for i := range got {
		got[i] = float32(math.NaN())
	}
	fast.attend(got, c.q, c.nTok, c.pos0, sh, newAttnBufs(threads, sh.heads/sh.kvHeads, sh.headDim, ctx, false))
	want = make([]float32, len(c.q))
	scratch := make([]float32, ref.AttentionScratch(c.nTok, c.pos0))
	ref.AttentionWith(want, c.q, rk, rv, c.nTok, c.pos0, sh.heads, sh.kvHeads, sh.headDim, sh.scale, ref.AttnOptions{Window: sh.window, SoftCap: sh.softCap}, scratch)
	return got, want
}

// TestAttentionMatchesRef compares kvCache.attend with ref.Attention on
// random inputs within attnBounds (see there).
func TestAttentionMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	type shape struct{ nTok, pos0 int }
	shapes := []shape{{1, 0}, {1, 37}, {1, 2047}, {5, 3}, {9, 200}, {3, 2045}}
	for _, kt := range []KVType{KVF16, KVF32} {
		for _, hd := range []int{8, 40, 64, 80, 128} { // 80: Phi-2, whole 16-value GEMM chunks only; 40: a tail past 32
			for _, group := range []int{1, 4, 8} {
				for i, s := range shapes {
					kvHeads := 1 + (i+group)%2
					c := newAttnCase(rng, kvHeads*group, kvHeads, hd, s.nTok, s.pos0, kt)
					if i%2 == 1 {
						c.sh.window = 5 + 7*i // a sliding window shorter than the context
					}
					if i%3 == 2 {
						c.sh.softCap = 1.5 // Gemma 2's soft-capping, tight enough to bite
					}
					name := fmt.Sprintf("%s/hd%d/gqa%d/tok%d@%d/window%d/cap%g", kt, hd, group, s.nTok, s.pos0, c.sh.window, c.sh.softCap)
					t.Run(name, func(t *testing.T) { c.check(t, 3) })
				}
			}
		}
	}
}

func (c *attnCase) check(t *testing.T, threads int) {
	got, want := c.run(threads)
	// The F32 path takes ref's dot products (llama.cpp's orders): bit for
	// bit, decode (ggml_vec_dot_f32) and prompts (tinyBLAS) alike. So does
	// the F16 path on AVX-512, whose F16 kernels sum in llama.cpp's
	// AVX-512 orders, where its order does not depend on the batch as
	// llama.cpp's does: prompts on the GEMM path (tinyBLAS), single tokens
	// off it (ggml_vec_dot_f16).
	f16Exact := simd.Variant() == "avx512vnni" && (c.nTok >= 2) == (c.sh.headDim%f16GemmChunk == 0)
	if c.kvType == KVF32 || f16Exact {
		for i := range got {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]),
				"element %d (token %d): got %g, ref %g", i, i/(c.sh.heads*c.sh.headDim), got[i], want[i])
		}
		return
	}
	bound := c.attnBounds()
	worst := 0.0
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if !(d <= bound[i]) {
			t.Fatalf("element %d (token %d): got %g, ref %g, |diff| %.3g > bound %.3g", i, i/(c.sh.heads*c.sh.headDim), got[i], want[i], d, bound[i])
		}
		worst = max(worst, d/bound[i])
	}
	t.Logf("largest |diff|/bound %.3f", worst)
}

// TestAttentionThreadsAgree checks that every split of the work, heads
// included (decode with more workers than KV heads), gives the same bits.
func TestAttentionThreadsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, kt := range []KVType{KVF16, KVF32} {
		for _, hd := range []int{64, 80} {
			for _, nTok := range []int{1, 6} {
				c := newAttnCase(rng, 16, 2, hd, nTok, 100, kt)
				one, _ := c.run(1)
				for _, threads := range []int{2, 3, 7, 32} {
					got, _ := c.run(threads)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(one[i]) {
							t.Fatalf("%s hd %d nTok %d: %d threads give %g at %d, 1 thread %g", kt, hd, nTok, threads, got[i], i, one[i])
						}
					}
				}
			}
		}
	}
}

// TestAttentionBlocksMatchDecode checks that a prompt attended at once,
// in blocks of consecutive tokens (attendBlockF16), gives the bits of the
// same tokens attended one at a time as decode does, for multi-head
// (blocks of 16 tokens), grouped (7 heads: blocks of 2) and wide-group
// heads, on one and several workers, with a sliding window and
// soft-capping too. Its 37 tokens end in a partial block.
func TestAttentionBlocksMatchDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, hd := range []int{64, 80} {
		for _, geo := range [][2]int{{1, 3}, {7, 2}, {16, 1}} { // query heads per KV head, KV heads
			group, kvHeads := geo[0], geo[1]
			for _, pos0 := range []int{0, 29} {
				c := newAttnCase(rng, kvHeads*group, kvHeads, hd, 37, pos0, KVF16)
				if pos0 > 0 {
					c.sh.window, c.sh.softCap = 40, 1.5
				}
				name := fmt.Sprintf("hd%d/gqa%d/@%d", hd, group, pos0)
				ctx := pos0 + c.nTok + 5
				fast := newKVCache(kvHeads, hd, ctx, KVF16)
				w := kvHeads * hd
				c.fill(fast, refKV(ctx, w, KVF16), refKV(ctx, w, KVF16))
				rowLen := c.sh.heads * hd
				single := make([]float32, len(c.q))
				bufs := newAttnBufs(1, group, hd, ctx, false)
				for tok := range c.nTok {
					fast.attend(single[tok*rowLen:(tok+1)*rowLen], c.q[tok*rowLen:], 1, pos0+tok, c.sh, bufs)
				}
				for _, threads := range []int{1, 3} {
					got := make([]float32, len(c.q))
					fast.attend(got, c.q, c.nTok, pos0, c.sh, newAttnBufs(threads, group, hd, ctx, false))
					for j := range got {
						require.Equal(t, math.Float32bits(single[j]), math.Float32bits(got[j]),
							"%s, %d threads: element %d (token %d) is %g at once, %g alone", name, threads, j, j/rowLen, got[j], single[j])
					}
				}
			}
		}
	}
}

// TestAttentionNoAllocs checks that attention allocates nothing per call
// (one worker: parallelFor's goroutines are the only allocations else).
func TestAttentionNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kt := range []KVType{KVF16, KVF32} {
		c := newAttnCase(rng, 8, 2, 64, 4, 60, kt)
		ctx := 100
		fast := newKVCache(2, 64, ctx, kt)
		c.fill(fast, refKV(ctx, 128, kt), refKV(ctx, 128, kt))
		out, bufs := make([]float32, len(c.q)), newAttnBufs(1, 4, 64, ctx, false)
		if n := testing.AllocsPerRun(5, func() { fast.attend(out, c.q, c.nTok, c.pos0, c.sh, bufs) }); n != 0 {
			t.Errorf("%s: %v allocations per call", kt, n)
		}
	}
}

// attnBounds returns, per output element, how far kvCache.attend may be
// from ref.Attention. Both round at the same points (Q and P to binary16
// for an F16 cache) and share ref.SoftmaxRow, so they differ only in the
// summation order of their dot products. With u = 2⁻²⁴, a float32 dot
// product of n terms in any order lies within n·u·Σ|aᵢbᵢ| of the exact one,
// so for each probability row (computed here in float64):
//
//   - each scaled score is within e_p = scale·(hd+2)·u·Σ|q̂ᵢkᵢ| of exact
//     (the +2 covers the scale multiplication);
//   - each implementation's probability is then within a relative η =
//     4·max e_p + 64u of the float64 softmax (shifted scores move
//     exp(x−max) and the sum by at most 2·max e_p each; 64u covers ggml's
//     exp approximation and the float32 roundings of the softmax);
//   - F16: both implementations round p to the same binary16 value unless
//     p·(1±η) straddles a rounding point, where they may differ by that
//     binary16 step; F32: the two probabilities differ by at most 2η·p;
//   - P·V over N cells: 2·N·u·Σ p̂|v| between the two summation orders,
//     plus Σ |Δp̂|·|v| from the step above.
//
// The sum of these, times 1.25 for second-order terms, is the bound. A
// wrong rounding point (Q or P not rounded to binary16) or any indexing
// error exceeds it.
func (c *attnCase) attnBounds() []float64 {
	sh := c.sh
	hd, group := sh.headDim, sh.heads/sh.kvHeads
	const u = 0x1p-24
	nPV := float64(padKV(c.pos0 + c.nTok))
	bound := make([]float64, len(c.q))
	for t := range c.nTok {
		visible := c.pos0 + t + 1
		first := 0 // the sliding window's first visible position
		if sh.window > 0 {
			first = max(0, visible-sh.window)
		}
		for h := range sh.heads {
			off := (t*sh.heads + h) * hd
			g := h / group
			pw, dp := c.probBounds(c.q[off:off+hd], g, first, visible)
			for d := range hd {
				var sum, flip float64
				for p := first; p < visible; p++ {
					av := math.Abs(float64(c.v[p][g*hd+d]))
					sum += pw[p] * av
					flip += dp[p] * av
				}
				bound[off+d] = 1.25 * (2*nPV*u*sum + flip)
			}
		}
	}
	return bound
}

// probBounds returns, for one query head against KV head g, an upper
// bound on each probability as either implementation uses it (pw) and on
// the difference between the two implementations' values (dp), over the
// positions first … visible−1 the query sees (soft-capped as ref caps
// them: cap·tanh has a slope of at most 1, so the score error bound holds).
func (c *attnCase) probBounds(qh []float32, g, first, visible int) (pw, dp []float64) {
	const u = 0x1p-24
	hd, scale := c.sh.headDim, float64(c.sh.scale)
	q := make([]float64, hd)
	for i, x := range qh {
		if c.kvType == KVF16 {
			x = quant.FP16ToFP32(quant.FP32ToFP16(x))
		}
		q[i] = float64(x)
	}
	x := make([]float64, visible)
	maxX, maxErr := math.Inf(-1), 0.0
	for p := first; p < visible; p++ {
		var s, a float64
		for i, k := range c.k[p][g*hd : (g+1)*hd] {
			s += q[i] * float64(k)
			a += math.Abs(q[i] * float64(k))
		}
		if cp := float64(c.sh.softCap); cp > 0 {
			s = cp * math.Tanh(s/cp)
		}
		x[p] = s * scale
		maxX = max(maxX, x[p])
		maxErr = max(maxErr, scale*float64(hd+2)*u*a)
	}
	var sum float64
	for p := first; p < visible; p++ {
		x[p] = math.Exp(x[p] - maxX)
		sum += x[p]
	}
	eta := 4*maxErr + 64*u
	pw, dp = make([]float64, visible), make([]float64, visible)
	for p := first; p < visible; p++ {
		prob := x[p] / sum
		if c.kvType == KVF32 {
			pw[p], dp[p] = prob*(1+eta), 2*eta*prob
			continue
		}
		lo := halfRound(prob * (1 - eta - 4*u))
		hi := halfRound(prob * (1 + eta + 4*u))
		pw[p], dp[p] = hi, hi-lo
	}
	return pw, dp
}

func halfRound(x float64) float64 {
	return float64(quant.FP16ToFP32(quant.FP32ToFP16(float32(x))))
}

// TestStoreRun checks kvCache.storeRun, the batch append, against the
// layout written out by hand: K row-major, V transposed per position, each
// value rounded by quant.FP32ToFP16 (F16) or kept (F32), the V padding
// and the positions outside the run untouched. Widths and run lengths
// straddle the V store's blocks (vBlockToks, vBlockDims).
func TestStoreRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, kt := range []KVType{KVF16, KVF32} {
		for _, geo := range [][2]int{{1, 8}, {3, 80}, {5, 64}, {32, 80}} {
			kvHeads, hd := geo[0], geo[1]
			w := kvHeads * hd
			for _, run := range [][2]int{{0, 1}, {3, 15}, {1, 16}, {0, 17}, {7, 40}} {
				pos, n := run[0], run[1]
				ctx := pos + n + 2
				c := newKVCache(kvHeads, hd, ctx, kt)
				k, v := randVec(rng, n*w, 1), randVec(rng, n*w, 1)
				c.storeRun(pos, k, v, n, make([]byte, vBlockBytes))
				name := fmt.Sprintf("%s w=%d run %d@%d", kt, w, n, pos)
				for p := range c.vStride {
					for i := range w {
						wantK, wantV := float32(0), float32(0)
						if p >= pos && p < pos+n {
							wantK, wantV = k[(p-pos)*w+i], v[(p-pos)*w+i]
						}
						if p < ctx {
							require.Equal(t, storedBits(wantK, kt), c.kBits(p*w+i), "%s: K[%d][%d]", name, p, i)
						}
						require.Equal(t, storedBits(wantV, kt), c.vBits(i*c.vStride+p), "%s: V[%d][%d]", name, i, p)
					}
				}
			}
		}
	}
}

// storedBits is x as a cache of type kt holds it.
func storedBits(x float32, kt KVType) uint32 {
	if kt == KVF16 {
		return uint32(quant.FP32ToFP16(x))
	}
	return math.Float32bits(x)
}

func (c *kvCache) kBits(i int) uint32 {
	if c.f16 {
		return uint32(c.k16[2*i]) | uint32(c.k16[2*i+1])<<8
	}
	return math.Float32bits(c.k32[i])
}

func (c *kvCache) vBits(i int) uint32 {
	if c.f16 {
		return uint32(c.v16[2*i]) | uint32(c.v16[2*i+1])<<8
	}
	return math.Float32bits(c.v32[i])
}

// TestStoreJobMatchesStoreRun checks that storing a prompt in column
// ranges on several workers (storeJob) writes exactly the caches one
// storeRun writes, for widths that end in a partial storeUnit and runs
// that straddle vBlockToks.
func TestStoreJobMatchesStoreRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, kt := range []KVType{KVF16, KVF32} {
		for _, geo := range [][2]int{{3, 80}, {2, 64}, {5, 32}} {
			kvHeads, hd := geo[0], geo[1]
			w := kvHeads * hd
			for _, run := range [][2]int{{0, 16}, {5, 37}} {
				pos, n := run[0], run[1]
				for _, threads := range []int{2, 3} {
					ctx := pos + n + 3
					one, many := newKVCache(kvHeads, hd, ctx, kt), newKVCache(kvHeads, hd, ctx, kt)
					k, v := randVec(rng, n*w, 1), randVec(rng, n*w, 1)
					one.storeRun(pos, k, v, n, make([]byte, vBlockBytes))
					j := storeJob{c: many, pos: pos, n: n, k: k, v: v, bufs: newAttnBufs(threads, 1, hd, ctx, false)}
					j.store(threads)
					name := fmt.Sprintf("%s w=%d run %d@%d, %d threads", kt, w, n, pos, threads)
					require.Equal(t, one.k16, many.k16, "%s: K", name)
					require.Equal(t, one.v16, many.v16, "%s: V", name)
					require.Equal(t, one.k32, many.k32, "%s: K", name)
					require.Equal(t, one.v32, many.v32, "%s: V", name)
				}
			}
		}
	}
}

// TestScoresF16Order holds the F16 scores of the per-head path to the dot
// kernel over the whole head, which on AVX-512 is ggml_vec_dot_f16 (simd
// tests it so): whole 64-value blocks, then the tail in float64 with a
// single rounding, for heads with and without a tail past 32 or 64.
func TestScoresF16Order(t *testing.T) {
	if simd.Variant() != "avx512vnni" {
		t.Skip("ggml_vec_dot_f16's order is the AVX-512 variant's")
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	dot := simd.VecDot(gguf.TypeF16)
	for _, hd := range []int{8, 40, 72, 100, 136} {
		const kvHeads, ctx = 2, 50
		c := newKVCache(kvHeads, hd, ctx, KVF16)
		for p := range ctx {
			c.store(p, randVec(rng, kvHeads*hd, 1.5), randVec(rng, kvHeads*hd, 1))
		}
		b := &newAttnBufs(1, 1, hd, ctx, false)[0]
		qh := randVec(rng, hd, 1)
		row := make([]float32, ctx)
		for g := range kvHeads {
			c.scoresF16(row, qh, g, b)
			q16 := make([]byte, 2*hd)
			simd.QuantizeRow(gguf.TypeF16)(qh, q16)
			for p := range row {
				want := dot(hd, c.k16[2*(p*c.width()+g*hd):], q16)
				require.Equal(t, math.Float32bits(want), math.Float32bits(row[p]), "hd %d head %d position %d: got %g, want %g", hd, g, p, row[p], want)
			}
		}
	}
}
