package compute

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/quant"
)

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

// mlp is y = W2·silu(W1·x + b1) + b2 in float64, row by row.
func mlp(x, w1, b1, w2, b2 []float32, in, hid, out int) []float32 {
	rows := len(x) / in
	y := make([]float32, 0, rows*out)
	h := make([]float64, hid)
	for r := 0; r < rows; r++ {
		for j := 0; j < hid; j++ {
			s := float64(b1[j])
			for k := 0; k < in; k++ {
				s += float64(w1[j*in+k]) * float64(x[r*in+k])
			}
			h[j] = s / (1 + math.Exp(-s))
		}
		for j := 0; j < out; j++ {
			s := float64(b2[j])
			for k := 0; k < hid; k++ {
				s += float64(w2[j*hid+k]) * h[k]
			}
			y = append(y, float32(s))
		}
	}
	return y
}

func TestMLPMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const in, hid, out = 24, 40, 7
	w1, b1, w2, b2 := randVec(r, hid*in), randVec(r, hid), randVec(r, out*hid), randVec(r, out)
	b := NewBuilder()
	x := b.Input("x", in)
	h := b.Op(ops.Add, nil, b.Op(ops.MatMul, nil, x, b.Const("w1", w1, hid, in)), b.Const("b1", b1, hid))
	h = b.Op(ops.SiLU, nil, h)
	y := b.Op(ops.Add, nil, b.Op(ops.MatMul, nil, h, b.Const("w2", w2, out, hid)), b.Const("b2", b2, out))
	b.Output("y", y)
	b.Output("h", h)
	p, err := b.Compile(Options{MaxRows: 16})
	require.NoError(t, err)
	require.NotNil(t, p.Graph().Memory, "planned")
	assert.Equal(t, graph.Type{DType: graph.F32, Shape: graph.Shape{graph.Tokens, graph.D(out)}}, p.Outputs()["y"])
	fused := false
	for _, n := range p.Graph().Nodes {
		fused = fused || n.Op == ops.MatMulBias
	}
	assert.True(t, fused, "the passes ran: MatMul+Add became MatMulBias")
	s, err := p.NewSession()
	require.NoError(t, err)
	for _, rows := range []int{1, 5, 16} {
		xs := randVec(r, rows*in)
		got, err := s.Run(F32("x", xs))
		require.NoError(t, err)
		want := mlp(xs, w1, b1, w2, b2, in, hid, out)
		require.Len(t, got["y"], len(want))
		require.Len(t, got["h"], rows*hid)
		for i := range want {
			assert.InDelta(t, want[i], got["y"][i], 1e-4, "rows %d, element %d", rows, i)
		}
	}
}

// Embedding lookups from I32 inputs and a Q8_0 weight made from Go slices.
func TestIndicesAndQuantizedWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const vocab, dim, n = 10, 32, 6
	table := randVec(r, vocab*dim)
	wf := randVec(r, n*dim)
	size, err := gguf.TypeQ8_0.RowBytes(uint64(len(wf)))
	require.NoError(t, err)
	q := make([]byte, size)
	require.NoError(t, quant.Quantize(gguf.TypeQ8_0, wf, q))
	b := NewBuilder()
	e := b.Op(ops.GetRows, nil, b.Const("table", table, vocab, dim), b.InputIDs("ids"))
	b.Output("y", b.Op(ops.MatMul, nil, e, b.Weight("w", gguf.TypeQ8_0, q, n, dim)))
	p, err := b.Compile(Options{MaxRows: 4})
	require.NoError(t, err)
	s, err := p.NewSession()
	require.NoError(t, err)
	out, err := s.Run(I32("ids", []int32{3, 9}))
	require.NoError(t, err)
	for row, id := range []int{3, 9} {
		for j := 0; j < n; j++ {
			var want float64
			for k := 0; k < dim; k++ {
				want += float64(table[id*dim+k]) * float64(wf[j*dim+k])
			}
			assert.InDelta(t, want, out["y"][row*n+j], 0.05)
		}
	}
	_, err = s.Run(I32("ids", []int32{3, 10}))
	assert.ErrorContains(t, err, "outside the vocabulary of 10")
}

// Bad shapes, types and feeds are errors with the op and names in them,
// never panics.
func TestBuilderErrors(t *testing.T) {
	cases := map[string]struct {
		build func(b *Builder)
		want  string
	}{
		"matmul widths": {func(b *Builder) {
			b.Output("y", b.Op(ops.MatMul, nil, b.Input("x", 3), b.Const("w", make([]float32, 8), 2, 4)))
		}, "inner dimensions differ"},
		"unknown op": {func(b *Builder) { b.Output("y", b.Op("Frobnicate", nil, b.Input("x", 3))) }, "unknown op"},
		"arity":      {func(b *Builder) { b.Output("y", b.Op(ops.Add, nil, b.Input("x", 3))) }, "takes 2 inputs, got 1"},
		"const size": {func(b *Builder) { b.Const("w", make([]float32, 5), 2, 3) }, "5 values for shape [2 3]"},
		"const rank": {func(b *Builder) { b.Const("w", make([]float32, 8), 2, 2, 2) }, "a vector or a matrix"},
		"width":      {func(b *Builder) { b.Input("x", 0) }, "width 0"},
		"names":      {func(b *Builder) { b.Input("x", 2); b.Input("x", 3) }, `input "x": the name is taken by input`},
		"zero value": {func(b *Builder) { b.Output("y", b.Op(ops.SiLU, nil, Value{})) }, "operand 0 is not a value of this builder"},
		"foreign value": {func(b *Builder) {
			o := NewBuilder()
			b.Output("y", b.Op(ops.SiLU, nil, o.Input("x", 2)))
		}, "not a value of this builder"},
		"ids as rows":  {func(b *Builder) { b.Output("y", b.Op(ops.SiLU, nil, b.InputIDs("ids"))) }, "want an F32 matrix"},
		"weight bytes": {func(b *Builder) { b.Weight("w", gguf.TypeQ8_0, make([]byte, 10), 2, 32) }, "10 bytes, a Q8_0 [2 32] takes 68"},
		"no outputs":   {func(b *Builder) { b.Input("x", 2) }, "no outputs"},
		"attention": {func(b *Builder) {
			x, pos := b.Input("x", 8), b.InputIDs("pos")
			b.Output("y", b.Op(ops.Attention, graph.Attrs{"heads": 1, "kv_heads": 1, "head_dim": 8, "scale": 1}, x, x, x, pos))
		}, "needs a model's KV cache"},
		"matrix operand": {func(b *Builder) {
			b.Output("y", b.Op(ops.Mul, nil, b.Input("x", 2), b.Const("m", make([]float32, 2), 1, 2)))
		}, "no backend supports it"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := NewBuilder()
			c.build(b)
			_, err := b.Compile(Options{})
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestRunErrors(t *testing.T) {
	b := NewBuilder()
	x, ids := b.Input("x", 2), b.InputIDs("ids")
	b.Output("y", b.Op(ops.SelectRows, nil, b.Op(ops.SiLU, nil, x), ids))
	p, err := b.Compile(Options{MaxRows: 4})
	require.NoError(t, err)
	s, err := p.NewSession()
	require.NoError(t, err)
	out, err := s.Run(F32("x", []float32{1, 2, 3, 4}), I32("ids", []int32{1, 0}))
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float32{3 / (1 + float32(math.Exp(-3))), 4 / (1 + float32(math.Exp(-4))), 1 / (1 + float32(math.Exp(-1))), 2 / (1 + float32(math.Exp(-2)))}, out["y"], 1e-6)
	for _, c := range []struct {
		in   []Feed
		want string
	}{
		{[]Feed{F32("x", []float32{1, 2})}, `input "ids" not fed`},
		{[]Feed{F32("x", []float32{1, 2, 3}), I32("ids", []int32{0})}, "not whole rows of 2"},
		{[]Feed{F32("x", []float32{1, 2}), I32("ids", []int32{0, 0})}, "2 rows, other inputs 1"},
		{[]Feed{F32("ids", []float32{1}), F32("x", []float32{1, 2})}, "feed it with compute.I32"},
		{[]Feed{F32("z", nil)}, `no input "z" (inputs: [ids x])`},
		{[]Feed{F32("x", make([]float32, 10)), I32("ids", make([]int32, 5))}, "5 rows: want 1 to 4"},
		{[]Feed{F32("x", []float32{1, 2}), I32("ids", []int32{1})}, "row 1 at index 0 is outside the 1 rows"},
		{[]Feed{F32("x", []float32{1, 2}), F32("x", []float32{1, 2})}, "fed twice"},
	} {
		_, err := s.Run(c.in...)
		assert.ErrorContains(t, err, c.want)
	}
	out, err = s.Run(F32("x", []float32{1, 2}), I32("ids", []int32{0}))
	require.NoError(t, err, "errors leave the session usable")
	assert.Len(t, out["y"], 2)
}
