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

// attnBatches are the batch sizes of the two interleaved sessions: prefill
// then decode, a full batch on top of a filled cache, and so on.
var attnBatches = [2][]int{{5, 1, 17, 1, 3, 16, 1}, {1, 1, 17, 2, 1}}

// attnCtx is the sessions' KV cache size: it holds every batch above and
// is not a multiple of 32.
const attnCtx = 50

func testAttention(t *testing.T, s *suite) {
	shapes := []attnShape{{4, 2, 8}, {8, 2, 64}, {3, 3, 40}, {6, 1, 32}}
	if s.short {
		shapes = shapes[:2]
	}
	for _, kv := range []backends.KVType{backends.KVF16, backends.KVF32} {
		t.Run(kv.String(), func(t *testing.T) {
			for _, sh := range shapes {
				t.Run(sh.String(), func(t *testing.T) { s.runAttention(t, sh, kv) })
			}
		})
	}
}

func (s *suite) runAttention(t *testing.T, sh attnShape, kv backends.KVType) {
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
	p := b.finish(out, out, ops.Attention, kv.String())
	if s.skipped(t, p.op, p.variant) {
		return
	}
	// The KV type is a session option, not a node property: a backend
	// without it may accept the node and refuse the session instead.
	declared := s.o.unsupported(p.op, p.variant)
	if declared && s.e.Supports(p.g.Nodes[p.node], p.g) == nil {
		prog, _ := s.compile(t, p, maxTokens, false)
		_, err := prog.NewState(backends.StateOptions{Ctx: attnCtx, KVType: kv})
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
		sessions[i] = s.session(t, prog, attnCtx, kv, 0)
		refs[i] = newAttnRef(b, sh, kv, scale)
	}
	worst := 0.0
	for step := 0; step < len(attnBatches[0]) || step < len(attnBatches[1]); step++ {
		for i, ss := range sessions {
			if step < len(attnBatches[i]) {
				worst = max(worst, s.step(t, rng, ss, p, attnBatches[i][step], refs[i].want(t), tol))
			}
		}
	}
	report(t, tol, worst)
}

// attnRef is one session's reference: its own K and V cache.
type attnRef struct {
	b      *builder
	sh     attnShape
	f16    bool
	scale  float32
	kc, vc ref.KV
}

func newAttnRef(b *builder, sh attnShape, kv backends.KVType, scale float32) *attnRef {
	w := sh.kvHeads * sh.headDim
	r := &attnRef{b: b, sh: sh, f16: kv == backends.KVF16, scale: scale}
	if r.f16 {
		r.kc, r.vc = ref.KV{F16: make([]uint16, attnCtx*w), RowLen: w}, ref.KV{F16: make([]uint16, attnCtx*w), RowLen: w}
	} else {
		r.kc, r.vc = ref.KV{F32: make([]float32, attnCtx*w), RowLen: w}, ref.KV{F32: make([]float32, attnCtx*w), RowLen: w}
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
// ref.Attention's result with the error scale Σₚ pₚ·|vₚ| per element
// (probabilities in float64 from the cached K and the query as rounded).
func (r *attnRef) want(t *testing.T) oracle {
	return func(tokens []int32, pos0 int) ([]float32, []float64) {
		sh, n := r.sh, len(tokens)
		q, k, v := r.b.gather("q", tokens), r.b.gather("k", tokens), r.b.gather("v", tokens)
		w := sh.kvHeads * sh.headDim
		for i := range n {
			r.kc.Store(pos0+i, k[i*w:(i+1)*w])
			r.vc.Store(pos0+i, v[i*w:(i+1)*w])
		}
		out := make([]float32, len(q))
		scratch := make([]float32, ref.AttentionScratch(n, pos0))
		ref.Attention(out, q, r.kc, r.vc, n, pos0, sh.heads, sh.kvHeads, sh.headDim, r.scale, scratch)
		scale := make([]float64, len(q))
		group := sh.heads / sh.kvHeads
		qw := sh.heads * sh.headDim
		for tk := range n {
			visible := pos0 + tk + 1
			for h := range sh.heads {
				qh := q[tk*qw+h*sh.headDim : tk*qw+(h+1)*sh.headDim]
				kvOff := h / group * sh.headDim
				p := make([]float64, visible)
				top := math.Inf(-1)
				for pos := range visible {
					var dot float64
					for i, x := range qh {
						if r.f16 {
							x = quant.FP16ToFP32(quant.FP32ToFP16(x))
						}
						dot += float64(x) * cached(r.kc, pos, kvOff+i)
					}
					p[pos] = dot * float64(r.scale)
					top = max(top, p[pos])
				}
				var sum float64
				for pos := range p {
					p[pos] = math.Exp(p[pos] - top)
					sum += p[pos]
				}
				for d := range sh.headDim {
					var m float64
					for pos := range p {
						m += p[pos] / sum * math.Abs(cached(r.vc, pos, kvOff+d))
					}
					scale[tk*qw+h*sh.headDim+d] = m
				}
			}
		}
		return out, scale
	}
}
