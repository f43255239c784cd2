package backendtest

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
)

// shiftCase is one context-shift geometry: an attention layer whose keys
// come from a RoPE of the given form.
type shiftCase struct {
	name string
	sh   attnShape
	rope ref.RoPE // Dims, Base, FreqScale, NeoX, Factors, YaRN fields
}

var shiftCases = []shiftCase{
	{"norm", attnShape{4, 2, 8}, ref.RoPE{Dims: 8, Base: 10000, FreqScale: 1}},
	{"neox,partial", attnShape{4, 2, 16}, ref.RoPE{Dims: 8, Base: 10000, FreqScale: 1, NeoX: true}},
	{"factors", attnShape{3, 3, 8}, ref.RoPE{Dims: 8, Base: 500000, FreqScale: 1, Factors: []float32{1, 2.5, 4, 8}}},
	{"yarn,neox", attnShape{8, 2, 32}, ref.RoPE{Dims: 32, Base: 10000, FreqScale: 0.25, NeoX: true, ExtFactor: 1, AttnFactor: 1.25, CorrDims: [2]float32{2, 9}}},
}

// shiftSteps: fill, shift, decode and prefill on top, shift again. Each
// shift keeps keep cells and discards half of the rest (llama.cpp's
// rule), so the moved cells outnumber the discarded ones and a backend
// moving in blocks needs two.
var shiftSteps = []struct {
	batches []int
	keep    int // then shift (−1: no shift)
}{
	{[]int{7, 1, 9, 1}, 3},
	{[]int{1, 5, 1}, 1},
	{[]int{1, 2}, -1},
}

// testKVShift checks backends.KVShifter against ref.ShiftKV: after a
// shift, attention over the moved (and rotated) cells must match
// ref.Attention over the reference caches shifted the same way.
func testKVShift(t *testing.T, s *suite, kv backends.KVType) {
	cases := shiftCases
	if s.short {
		cases = cases[:2]
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { s.runKVShift(t, c, kv) })
	}
}

func (s *suite) runKVShift(t *testing.T, c shiftCase, kv backends.KVType) {
	sh, r := c.sh, c.rope
	r.Unfused = s.o.UnfusedRoPE
	b := s.builder(t)
	q := b.activation("q", sh.heads*sh.headDim, unit)
	kraw := b.activation("k", sh.kvHeads*sh.headDim, dist{sd: 1.5})
	v := b.activation("v", sh.kvHeads*sh.headDim, unit)
	attrs := graph.Attrs{"heads": float64(sh.kvHeads), "head_dim": float64(sh.headDim), "dims": float64(r.Dims),
		"base": float64(r.Base), "freq_scale": float64(r.FreqScale), "neox": boolAttr(r.NeoX)}
	if r.ExtFactor != 0 {
		attrs["ext_factor"], attrs["attn_factor"] = float64(r.ExtFactor), float64(r.AttnFactor)
		attrs["corr_lo"], attrs["corr_hi"] = float64(r.CorrDims[0]), float64(r.CorrDims[1])
	}
	in := []int{kraw, b.positions}
	if r.Factors != nil {
		in = append(in, b.vector("rope_freqs", r.Factors))
	}
	k := b.op(ops.RoPE, "k_rope", attrs, in...)
	scale := float32(1 / math.Sqrt(float64(sh.headDim)))
	out := b.op(ops.Attention, "attn", graph.Attrs{"heads": float64(sh.heads), "kv_heads": float64(sh.kvHeads),
		"head_dim": float64(sh.headDim), "scale": float64(scale)}, q, k, v, b.positions)
	p := b.finish(out, out, ops.Attention, kv.String())
	if s.skipped(t, p.op, p.variant) || s.o.unsupported(p.op, p.variant) || !s.supported(t, p) {
		return
	}
	const ctx = 20
	prog, _ := s.compile(t, p, maxTokens, false)
	ss := s.session(t, prog, ctx, kv, 0)
	shifter, ok := ss.st.(backends.KVShifter)
	if !ok {
		t.Skipf("%s States have no context shift (backends.KVShifter)", s.e.Name())
	}
	ar := newAttnRef(b, sh, kv, scale, ctx)
	want := func(tokens []int32, pos0 int) ([]float32, []float64) {
		// The reference caches take the keys rotated for their
		// positions, as the graph's RoPE computes them.
		w := sh.kvHeads * sh.headDim
		kr := b.gather("k", tokens)
		for i := range tokens {
			r.Apply(kr[i*w:(i+1)*w], sh.kvHeads, sh.headDim, int32(pos0+i))
		}
		return ar.wantKeys(tokens, pos0, kr)
	}
	tol := s.o.tolerance(p.op, p.variant)
	rng := s.rng(t)
	worst := 0.0
	for i, st := range shiftSteps {
		for _, n := range st.batches {
			worst = max(worst, s.step(t, rng, ss, p, n, want, tol))
		}
		if st.keep < 0 {
			continue
		}
		n := ss.pos
		discard := (n - st.keep) / 2
		require.NoError(t, shifter.ShiftSeq(0, st.keep, discard, n), "shift %d: keep %d, discard %d of %d", i, st.keep, discard, n)
		ref.ShiftKV(ar.kc, ar.vc, st.keep, discard, n, r, sh.kvHeads, sh.headDim)
		ss.pos = n - discard
	}
	require.Error(t, shifter.ShiftSeq(0, 5, 3, ctx+1), "a shift past the context must be refused")
	report(t, tol, worst)
}

// vector adds an F32 weight vector with the given values.
func (b *builder) vector(name string, vals []float32) int {
	data := make([]byte, 4*len(vals))
	for i, x := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	info := gguf.TensorInfo{Name: name, Type: gguf.TypeF32, Size: uint64(len(data)), Dims: []uint64{uint64(len(vals))}}
	b.ws[name] = &tensor{info: info, data: data, vals: vals, cols: len(vals)}
	return b.b.Weight(name, graph.Type{DType: gguf.TypeF32, Shape: graph.S(len(vals))})
}

func boolAttr(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
