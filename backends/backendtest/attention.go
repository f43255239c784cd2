package backendtest

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// attnShape is one attention geometry.
type attnShape struct{ heads, kvHeads, headDim int }

func (a attnShape) String() string {
	return fmt.Sprintf("H=%d,KV=%d,hd=%d", a.heads, a.kvHeads, a.headDim)
}

// attnRun is how a Program is exercised: the batch sizes of two
// interleaved sessions and their KV cache size.
type attnRun struct {
	name    string
	batches [2][]int
	ctx     int
}

// attnRuns: prefill then decode, a full batch on top of a filled cache and
// so on, in a cache that is not a multiple of 32; then (not in -short) a
// long history, with decode steps past several hundred positions.
var attnRuns = []attnRun{
	{"", [2][]int{{5, 1, 17, 1, 3, 16, 1}, {1, 1, 17, 2, 1}}, 50},
	{"long", [2][]int{{17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 1, 1, 1, 1}, {1}}, 310},
}

func testAttention(t *testing.T, s *suite) {
	shapes := []attnShape{{4, 2, 8}, {8, 2, 64}, {3, 3, 40}, {6, 1, 32}}
	if s.short {
		shapes = shapes[:2]
	}
	for _, kv := range []backends.KVType{backends.KVF16, backends.KVF32} {
		t.Run(kv.String(), func(t *testing.T) {
			for _, sh := range shapes {
				t.Run(sh.String(), func(t *testing.T) { s.runAttention(t, sh, kv, attnRuns[0]) })
			}
			if !s.short {
				r := attnRuns[1]
				sh := shapes[1]
				t.Run(sh.String()+","+r.name, func(t *testing.T) { s.runAttention(t, sh, kv, r) })
			}
			for _, sh := range shapes[:2] {
				t.Run(sh.String()+",seqs", func(t *testing.T) { s.runAttentionSeqs(t, sh, kv) })
			}
			t.Run("shift", func(t *testing.T) { testKVShift(t, s, kv) })
		})
	}
}

// attnPlan builds the graph of one Attention node.
func (s *suite) attnPlan(t *testing.T, sh attnShape, kv backends.KVType) (*builder, *plan, float32) {
	b := s.builder(t)
	qw, kw := sh.heads*sh.headDim, sh.kvHeads*sh.headDim
	q := b.activation("q", qw, unit)
	// Keys spread the scores over a few units: the softmax is neither flat
	// nor one-hot.
	k := b.activation("k", kw, dist{sd: 1.5})
	v := b.activation("v", kw, unit)
	scale := float32(1 / math.Sqrt(float64(sh.headDim)))
	out := b.op(ops.Attention, "attn", graph.Attrs{"heads": float64(sh.heads), "kv_heads": float64(sh.kvHeads),
		"head_dim": float64(sh.headDim), "scale": float64(scale)}, q, k, v, b.positions)
	return b, b.finish(out, out, ops.Attention, kv.String()), scale
}

func (s *suite) runAttention(t *testing.T, sh attnShape, kv backends.KVType, run attnRun) {
	b, p, scale := s.attnPlan(t, sh, kv)
	if s.skipped(t, p.op, p.variant) {
		return
	}
	// The KV type is a session option, not a node property: a backend
	// without it may accept the node and refuse the session instead.
	declared := s.o.unsupported(p.op, p.variant)
	if declared && s.e.Supports(p.g.Nodes[p.node], p.g) == nil {
		prog, _ := s.compile(t, p, maxTokens, false)
		_, err := prog.NewState(backends.StateOptions{Ctx: run.ctx, KVType: kv})
		require.Error(t, err, "Attention/%s: declared unsupported, but both Supports and NewState accept it", kv)
		t.Logf("Attention/%s: NewState refuses as declared: %v", kv, err)
		return
	}
	if !s.supported(t, p) {
		return
	}
	tol := s.o.tolerance(p.op, p.variant)
	prog, _ := s.compile(t, p, maxTokens, false)
	rng := s.rng(t)
	var sessions [2]*session
	var refs [2]*attnRef
	for i := range sessions {
		sessions[i] = s.session(t, prog, run.ctx, kv, 0)
		refs[i] = newAttnRef(b, sh, kv, scale, run.ctx)
	}
	worst := 0.0
	for step := 0; step < len(run.batches[0]) || step < len(run.batches[1]); step++ {
		for i, ss := range sessions {
			if step < len(run.batches[i]) {
				worst = max(worst, s.step(t, rng, ss, p, run.batches[i][step], refs[i].want(t), tol))
			}
		}
	}
	report(t, tol, worst)
}

// attnSeqSteps are the batches of a State of three sequences, each a list
// of (sequence, tokens) runs in batch order: prefill beside decode,
// sequences in any order, sequences absent from a step.
var attnSeqSteps = [][][2]int{
	{{0, 5}},
	{{1, 3}, {0, 1}},
	{{2, 1}, {0, 1}, {1, 7}},
	{{1, 1}, {2, 9}, {0, 1}},
	{{0, 1}, {1, 1}, {2, 1}},
	{{2, 1}, {1, 1}},
	{{0, 16}, {2, 1}},
	{{1, 1}, {0, 1}, {2, 1}},
}

// runAttentionSeqs runs attnSeqSteps through one State of three
// sequences; each sequence's reference is its own cache (ref.AttentionSeqs),
// so a token that read another sequence's cells, or a store into the
// wrong sequence, fails.
func (s *suite) runAttentionSeqs(t *testing.T, sh attnShape, kv backends.KVType) {
	b, p, scale := s.attnPlan(t, sh, kv)
	if s.skipped(t, p.op, p.variant) || s.o.unsupported(p.op, p.variant) || !s.supported(t, p) {
		return
	}
	const seqs, ctx = 3, 50
	tol := s.o.tolerance(p.op, p.variant)
	prog, _ := s.compile(t, p, maxTokens, false)
	st, err := prog.NewState(backends.StateOptions{Ctx: ctx, KVType: kv, Seqs: seqs})
	require.NoError(t, err, "NewState of %d sequences", seqs)
	t.Cleanup(func() { closeIfCloser(t, st) })
	refs := make([]*attnRef, seqs)
	for i := range refs {
		refs[i] = newAttnRef(b, sh, kv, scale, ctx)
	}
	rng, pos, worst := s.rng(t), make([]int, seqs), 0.0
	for i, step := range attnSeqSteps {
		var bt backends.Batch
		var runs []ref.SeqRun
		for _, r := range step {
			runs = append(runs, ref.SeqRun{Seq: r[0], Start: len(bt.Tokens), N: r[1], Pos: pos[r[0]]})
			for j := range r[1] {
				bt.Tokens = append(bt.Tokens, int32(rng.IntN(vocab)))
				bt.Positions = append(bt.Positions, int32(pos[r[0]]+j))
				bt.Seqs = append(bt.Seqs, int32(r[0]))
			}
			pos[r[0]] += r[1]
		}
		for _, r := range rng.Perm(len(bt.Tokens)) {
			bt.Rows = append(bt.Rows, int32(r))
		}
		label := fmt.Sprintf("step %d %v", i, step)
		got, err := runGuarded(st, bt)
		require.NoError(t, err, "%s: Run", label)
		require.Len(t, got, len(bt.Rows)*p.width, label)
		full, fullScale := attnSeqsWant(b, refs, bt.Tokens, runs, p.width)
		var sel []float32
		var selScale []float64
		for _, r := range bt.Rows {
			lo, hi := int(r)*p.width, (int(r)+1)*p.width
			sel, selScale = append(sel, full[lo:hi]...), append(selScale, fullScale[lo:hi]...)
		}
		worst = max(worst, compare(t, label, got, sel, selScale, bt.Rows, p.width, tol))
	}
	report(t, tol, worst)
}

// attnSeqsWant stores each run's K and V in its sequence's reference
// cache and returns ref.AttentionSeqs's result with the error scale of
// each run (see bound).
func attnSeqsWant(b *builder, refs []*attnRef, tokens []int32, runs []ref.SeqRun, width int) ([]float32, []float64) {
	sh := refs[0].sh
	q, k, v := b.gather("q", tokens), b.gather("k", tokens), b.gather("v", tokens)
	w := sh.kvHeads * sh.headDim
	kc, vc := make([]ref.KV, len(refs)), make([]ref.KV, len(refs))
	most := 0
	for i, r := range refs {
		kc[i], vc[i] = r.kc, r.vc
	}
	for _, r := range runs {
		for i := range r.N {
			t := r.Start + i
			refs[r.Seq].kc.Store(r.Pos+i, k[t*w:(t+1)*w])
			refs[r.Seq].vc.Store(r.Pos+i, v[t*w:(t+1)*w])
		}
		most = max(most, ref.AttentionScratch(r.N, r.Pos))
	}
	out := make([]float32, len(q))
	ref.AttentionSeqs(out, q, kc, vc, runs, sh.heads, sh.kvHeads, sh.headDim, refs[0].scale, make([]float32, most))
	scale := make([]float64, len(q))
	for _, r := range runs {
		for i := range r.N {
			for h := range sh.heads {
				off := (r.Start+i)*width + h*sh.headDim
				refs[r.Seq].bound(scale[off:off+sh.headDim], q[off:off+sh.headDim], h, r.Pos+i+1, r.Pos+r.N)
			}
		}
	}
	return out, scale
}

// attnRef is one session's reference: its own K and V cache.
type attnRef struct {
	b      *builder
	sh     attnShape
	f16    bool
	scale  float32
	kc, vc ref.KV
}

func newAttnRef(b *builder, sh attnShape, kv backends.KVType, scale float32, ctx int) *attnRef {
	w := sh.kvHeads * sh.headDim
	r := &attnRef{b: b, sh: sh, f16: kv == backends.KVF16, scale: scale}
	if r.f16 {
		r.kc, r.vc = ref.KV{F16: make([]uint16, ctx*w), RowLen: w}, ref.KV{F16: make([]uint16, ctx*w), RowLen: w}
	} else {
		r.kc, r.vc = ref.KV{F32: make([]float32, ctx*w), RowLen: w}, ref.KV{F32: make([]float32, ctx*w), RowLen: w}
	}
	return r
}

// cached returns element i of position p of cache c as stored.
func cached(c ref.KV, p, i int) float64 {
	if c.F16 != nil {
		return float64(quant.FP16ToFP32(c.F16[p*c.RowLen+i]))
	}
	return float64(c.F32[p*c.RowLen+i])
}

// want appends the batch's K and V to the reference cache and returns
// ref.Attention's result with its error scale (see bound).
func (r *attnRef) want(t *testing.T) oracle {
	return func(tokens []int32, pos0 int) ([]float32, []float64) {
		return r.wantKeys(tokens, pos0, r.b.gather("k", tokens))
	}
}

// wantKeys is want's oracle with the batch's K rows given.
func (r *attnRef) wantKeys(tokens []int32, pos0 int, k []float32) ([]float32, []float64) {
	sh, n := r.sh, len(tokens)
	q, v := r.b.gather("q", tokens), r.b.gather("v", tokens)
	w := sh.kvHeads * sh.headDim
	for i := range n {
		r.kc.Store(pos0+i, k[i*w:(i+1)*w])
		r.vc.Store(pos0+i, v[i*w:(i+1)*w])
	}
	out := make([]float32, len(q))
	scratch := make([]float32, ref.AttentionScratch(n, pos0))
	ref.Attention(out, q, r.kc, r.vc, n, pos0, sh.heads, sh.kvHeads, sh.headDim, r.scale, scratch)
	scale := make([]float64, len(q))
	qw := sh.heads * sh.headDim
	for tk := range n {
		for h := range sh.heads {
			off := tk*qw + h*sh.headDim
			r.bound(scale[off:off+sh.headDim], q[off:off+sh.headDim], h, pos0+tk+1, pos0+n)
		}
	}
	return out, scale
}

// bound sets m[d], for one query head h of a token that sees visible
// positions (the batch reaching last), to the largest difference between
// two implementations that round Q and P at ref.Attention's points and
// differ only in summation order and in the last bits of exp. With
// u = 2⁻²⁴ and probabilities p computed here in float64:
//
//   - a score is within e = scale·(hd+2)·u·Σᵢ|q̂ᵢkᵢ| of exact (the +2 for
//     the scaling), so each implementation's probability is within a
//     relative η = 4·max e + 64u of p (the max shift and the sum move by
//     up to 2e each; 64u for the exp approximation and float32 roundings);
//   - f16 cache: both round p to binary16, to the same value unless
//     p·(1±η) straddles a rounding point, where they may be one binary16
//     step apart; f32 cache: the two differ by at most 2η·p;
//   - P·V over N ≤ last rounded up to 32 cells: 2·N·u·Σ p̂|v| between two
//     summation orders, plus Σ |Δp̂|·|v| from the step above.
//
// The sum, times 1.25 for second-order terms, is m; the default Rel is 1.
func (r *attnRef) bound(m []float64, qh []float32, h, visible, last int) {
	const u = 0x1p-24
	sh := r.sh
	hd, scale := sh.headDim, float64(r.scale)
	kvOff := h / (sh.heads / sh.kvHeads) * hd
	q := make([]float64, hd)
	for i, x := range qh {
		if r.f16 {
			x = quant.FP16ToFP32(quant.FP32ToFP16(x))
		}
		q[i] = float64(x)
	}
	x := make([]float64, visible)
	top, maxErr := math.Inf(-1), 0.0
	for p := range visible {
		var dot, abs float64
		for i := range q {
			k := cached(r.kc, p, kvOff+i)
			dot += q[i] * k
			abs += math.Abs(q[i] * k)
		}
		x[p] = dot * scale
		top = max(top, x[p])
		maxErr = max(maxErr, scale*float64(hd+2)*u*abs)
	}
	var sum float64
	for p := range x {
		x[p] = math.Exp(x[p] - top)
		sum += x[p]
	}
	eta := 4*maxErr + 64*u
	pw, dp := make([]float64, visible), make([]float64, visible)
	for p := range x {
		prob := x[p] / sum
		if !r.f16 {
			pw[p], dp[p] = prob*(1+eta), 2*eta*prob
			continue
		}
		lo, hi := halfRound(prob*(1-eta-4*u)), halfRound(prob*(1+eta+4*u))
		pw[p], dp[p] = hi, hi-lo
	}
	nPV := float64((last + 31) / 32 * 32)
	for d := range m {
		var wsum, flip float64
		for p := range visible {
			v := math.Abs(cached(r.vc, p, kvOff+d))
			wsum += pw[p] * v
			flip += dp[p] * v
		}
		m[d] = 1.25 * (2*nPV*u*wsum + flip)
	}
}

// halfRound rounds x to the nearest binary16 value.
func halfRound(x float64) float64 {
	return float64(quant.FP16ToFP32(quant.FP32ToFP16(float32(x))))
}
