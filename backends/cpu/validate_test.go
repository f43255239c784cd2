package cpu

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/ops"
)

// tiny builds a small graph over stories260K's weights: body gets the
// inputs and the embedded tokens and returns the logits' input, an
// F32 [·, 64] value.
func tiny(t *testing.T, body func(b *graph.Builder, tokens, pos, rows, x int) int) (*graph.Graph, *gguf.File) {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	b := graph.NewBuilder()
	tokens := b.Input("tokens", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
	pos := b.Input("positions", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
	rows := b.Input("rows", graph.Type{DType: graph.I32, Shape: graph.S(graph.Rows)})
	embd := b.Weight("token_embd.weight", graph.Type{DType: graph.F32, Shape: graph.S(512, 64)})
	x := b.Op(ops.GetRows, "embd", nil, embd, tokens)
	y := body(b, tokens, pos, rows, x)
	out := b.Weight("output.weight", graph.Type{DType: graph.F32, Shape: graph.S(512, 64)})
	b.Output("logits", b.Op(ops.MatMul, "logits", nil, y, out))
	g, err := b.Graph()
	require.NoError(t, err)
	require.NoError(t, g.Verify(), "the graph is well typed: the CPU contract is what is tested")
	return g, f
}

// TestGraphContract builds well-typed graphs the kernels cannot run
// safely: Compile refuses each, naming the node.
func TestGraphContract(t *testing.T) {
	attn := graph.Attrs{"heads": 8, "kv_heads": 8, "head_dim": 8, "scale": 0.35}
	for _, c := range []struct {
		name string
		body func(b *graph.Builder, tokens, pos, rows, x int) int
		want string
	}{
		{"matrix weight read as an activation", func(b *graph.Builder, _, _, _, _ int) int {
			return b.Op(ops.RMSNorm, "norm", graph.Attrs{"eps": 1e-5}, b.Weight("output.weight", graph.Type{DType: graph.F32, Shape: graph.S(512, 64)}))
		}, `node 6 \(RMSNorm "norm"\): type F32\[512,64\]: a computed value must be F32 \[T or R, width\]`},
		{"attention over output rows", func(b *graph.Builder, _, _, rows, x int) int {
			q := b.Op(ops.SelectRows, "q", nil, x, rows)
			return b.Op(ops.Attention, "attn", attn, q, q, q, rows)
		}, `node 6 \(Attention "attn"\): operand 0 has R rows, attention needs one per token \(T\)`},
		{"part of a part", func(b *graph.Builder, _, _, _, x int) int {
			p := b.Op(ops.Part, "p", graph.Attrs{"start": 0, "width": 64}, x)
			return b.Op(ops.Part, "pp", graph.Attrs{"start": 0, "width": 64}, p)
		}, `node 6 \(Part "pp"\): a part of part node 5 \(Part "p"\)`},
		{"a graph the kernels can run", func(b *graph.Builder, _, pos, _, x int) int {
			return b.Op(ops.RoPE, "rope", graph.Attrs{"heads": 8, "head_dim": 8, "dims": 8, "base": 1e4, "freq_scale": 1}, x, pos)
		}, ``},
		{"fractional heads", func(b *graph.Builder, _, pos, _, x int) int {
			return b.Op(ops.RoPE, "rope", graph.Attrs{"heads": 8.5, "head_dim": 8, "dims": 8, "base": 1e4, "freq_scale": 1}, x, pos)
		}, `node 5 \(RoPE "rope"\): attribute heads = 8\.5 must be a whole number in \[1, 16777216\]`},
		{"indices from a weight", func(b *graph.Builder, _, _, _, x int) int {
			ids := b.Weight("ids", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
			return b.Op(ops.SelectRows, "sel", nil, x, ids)
		}, `node 5 \(Weight "ids"\): a weight's shape \[T\] must be constant`},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, f := tiny(t, c.body)
			_, err := Compile(g, f, Options{MaxTokens: 8, Threads: 2})
			if c.want == "" {
				require.NoError(t, err, "a graph the kernels can run")
				return
			}
			require.Error(t, err)
			assert.Regexp(t, c.want, err.Error())
		})
	}
}

// TestSelectRowsChecksIndices selects rows by token ids, a well-typed
// graph whose indices can exceed the batch: an error, not a panic.
func TestSelectRowsChecksIndices(t *testing.T) {
	g, f := tiny(t, func(b *graph.Builder, tokens, _, _, x int) int { return b.Op(ops.SelectRows, "sel", nil, x, tokens) })
	p, err := Compile(g, f, Options{MaxTokens: 8, Threads: 2})
	require.NoError(t, err)
	s, err := p.NewState(16, KVF16)
	require.NoError(t, err)
	_, err = s.Run([]int32{1, 0, 2}, seq(0, 3), []int32{0})
	require.NoError(t, err, "token ids below the batch size select rows")
	_, err = s.Run([]int32{1, 403, 2}, seq(3, 3), []int32{0})
	require.EqualError(t, err, `node 5 (SelectRows "sel"): row 403 at index 1 is outside the 3 rows of its input`)
}

// TestOptionsBounds refuses batches and thread counts out of range.
func TestOptionsBounds(t *testing.T) {
	g, f := tiny(t, func(_ *graph.Builder, _, _, _, x int) int { return x })
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{MaxTokens: -1}, "batch of -1 tokens: want 1 to 2147483647"},
		{Options{MaxTokens: MaxBatch + 1}, "batch of 2147483648 tokens: want 1 to 2147483647"},
		{Options{Threads: MaxThreads + 1}, "513 threads: want 1 to 512, or 0 for all cores (--threads)"},
		{Options{Threads: -3}, "-3 threads: want 1 to 512, or 0 for all cores (--threads)"},
	} {
		_, err := Compile(g, f, c.o)
		assert.EqualError(t, err, c.want)
	}
	p, err := Compile(g, f, Options{MaxTokens: MaxBatch, Threads: 1})
	require.NoError(t, err, "the largest batch compiles: nothing is allocated yet")
	z, err := p.StateBytes(1, KVF16)
	require.NoError(t, err)
	assert.Greater(t, z.Activations, int64(MaxBatch)*64*4, "the arena is sized for the batch")
}

// TestPanicIsAnError checks the message of a kernel panic (a bug).
func TestPanicIsAnError(t *testing.T) {
	p := compileStories(t, 4)
	err := p.fault("boom", 4)
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.EqualError(t, err, `internal error in node 4 (GetRows "inp_embd"): boom (a bug: please report it)`)
	assert.NotEmpty(t, pe.Stack)
}
