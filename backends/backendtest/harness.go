package backendtest

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
	"github.com/weft-ml/weft/quant"
)

// tensor is one weight the suite serves: its bytes and, for the
// reference, its values widened to float32.
type tensor struct {
	info gguf.TensorInfo
	data []byte
	vals []float32
	cols int
}

// row returns row r's values.
func (w *tensor) row(r int) []float32 { return w.vals[r*w.cols : (r+1)*w.cols] }

// weightSet is the suite's backends.Weights: random tensors by name.
type weightSet map[string]*tensor

func (ws weightSet) Tensor(name string) (*gguf.TensorInfo, bool) {
	w, ok := ws[name]
	if !ok {
		return nil, false
	}
	return &w.info, true
}

func (ws weightSet) TensorData(t *gguf.TensorInfo) []byte {
	if w, ok := ws[t.Name]; ok {
		return w.data
	}
	return nil
}

// builder is one test graph under construction: the three inputs every
// graph of the contract declares, random weights, and the node under test.
type builder struct {
	t         *testing.T
	s         *suite
	rng       *rand.Rand
	b         *graph.Builder
	ws        weightSet
	tokens    int
	positions int
	rows      int
	vocab     int
}

// vocab is the number of rows of every table read by GetRows: tokens are
// drawn from it, so rows repeat within a batch now and then.
const vocab = 40

func (s *suite) builder(t *testing.T) *builder {
	b := &builder{t: t, s: s, rng: s.rng(t), b: graph.NewBuilder(), ws: weightSet{}, vocab: vocab}
	b.tokens = b.b.Input("tokens", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
	b.positions = b.b.Input("positions", graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)})
	b.rows = b.b.Input("rows", graph.Type{DType: graph.I32, Shape: graph.S(graph.Rows)})
	return b
}

// dist is how random values are drawn: normal with standard deviation sd;
// spread > 0 multiplies each block of 32 by 10^U(−spread, spread), so
// blocks of one row differ in range as real weights do.
type dist struct {
	sd     float64
	spread float64
}

var (
	unit   = dist{sd: 1}
	spread = dist{sd: 1, spread: 1}
)

func (b *builder) values(n int, d dist) []float32 {
	x := make([]float32, n)
	scale := 1.0
	for i := range x {
		if d.spread > 0 && i%32 == 0 {
			scale = math.Pow(10, (2*b.rng.Float64()-1)*d.spread)
		}
		v := b.rng.NormFloat64() * d.sd * scale
		if v == 0 {
			v = d.sd * 0x1p-10 // never zeros
		}
		x[i] = float32(v)
	}
	return x
}

// weight adds a Weight node of type dt and shape dims (outermost first)
// holding random values drawn from d, stored with quant's reference
// quantizer; the types quant only reads (the IQ1/IQ2/IQ3 lattices, whose
// quantizers need an importance matrix) get random blocks instead.
func (b *builder) weight(name string, dt gguf.TensorType, d dist, dims ...int) int {
	n := 1
	for _, x := range dims {
		n *= x
	}
	cols := dims[len(dims)-1]
	var data []byte
	if quant.Writable(dt) {
		var err error
		data, err = quant.QuantizeAlloc(dt, b.values(n, d))
		require.NoError(b.t, err, "quantizing %s to %s", name, dt)
	} else {
		data = b.randomBlocks(dt, n)
	}
	vals := make([]float32, n)
	require.NoError(b.t, quant.Dequantize(dt, data, vals))
	info := gguf.TensorInfo{Name: name, Type: dt, Size: uint64(len(data))}
	for i := len(dims) - 1; i >= 0; i-- {
		info.Dims = append(info.Dims, uint64(dims[i]))
	}
	b.ws[name] = &tensor{info: info, data: data, vals: vals, cols: cols}
	return b.b.Weight(name, graph.Type{DType: dt, Shape: graph.S(anySlice(dims)...)})
}

// randomBlocks returns n values of a read-only block type as random
// bytes (every bit pattern is a valid lattice block: all grid points, sign
// codes and scales occur) with each block's d a binary16 between 1e-3 and
// 0.1; IQ1_M keeps d in the top nibbles of its four scale words.
func (b *builder) randomBlocks(dt gguf.TensorType, n int) []byte {
	bb := int(dt.BlockBytes())
	data := make([]byte, n/int(dt.BlockSize())*bb)
	for i := range data {
		data[i] = byte(b.rng.Uint32())
	}
	for off := 0; off < len(data); off += bb {
		h := quant.FP32ToFP16(float32(b.rng.Float64()*0.1 + 1e-3))
		if dt == gguf.TypeIQ1_M {
			for k := range 4 {
				data[off+49+2*k] = data[off+49+2*k]&0x0f | byte(h>>(4*k))<<4
			}
			continue
		}
		data[off], data[off+1] = byte(h), byte(h>>8)
	}
	return data
}

func anySlice(dims []int) []any {
	out := make([]any, len(dims))
	for i, d := range dims {
		out[i] = d
	}
	return out
}

// activation adds an F32 table of vocab rows of width cols and returns the
// GetRows node reading it with the tokens: a [T, cols] activation whose
// row t is the table's row tokens[t].
func (b *builder) activation(name string, cols int, d dist) int {
	w := b.weight(name, gguf.TypeF32, d, b.vocab, cols)
	return b.b.Op(ops.GetRows, name+".rows", nil, w, b.tokens)
}

// gather returns the rows of table name for tokens, one after another.
func (b *builder) gather(name string, tokens []int32) []float32 {
	w := b.ws[name]
	out := make([]float32, 0, len(tokens)*w.cols)
	for _, id := range tokens {
		out = append(out, w.row(int(id))...)
	}
	return out
}

// op appends an op node and stops the test on a builder error.
func (b *builder) op(op, name string, attrs graph.Attrs, inputs ...int) int {
	id := b.b.Op(op, name, attrs, inputs...)
	require.NoError(b.t, b.b.Err(), "building the %s graph", op)
	return id
}

// oracle computes a batch's expected result: want holds every batch row
// (or every row of a constant-shaped result) of width values, scale the
// op's error scale per element (nil where only Exact or Abs matter).
type oracle func(tokens []int32, pos0 int) (want []float32, scale []float64)

// plan is a finished test graph with what the suite needs to run it.
type plan struct {
	g       *graph.Graph
	ws      weightSet
	node    int // the node under test
	out     int // the SelectRows node named "logits"
	width   int
	op      string
	variant string
	// pick chooses the rows asked for in a batch of n; nil: all of them
	// in random order.
	pick func(rng *rand.Rand, n int) []int32
}

// finish selects rows of out with the rows input, names it "logits" and
// returns the plan; node is the node under test (for Supports).
func (b *builder) finish(out, node int, op, variant string) *plan {
	sel := b.op(ops.SelectRows, "logits", nil, out, b.rows)
	b.b.Output("logits", sel)
	g, err := b.b.Graph()
	require.NoError(b.t, err)
	require.NoError(b.t, g.Verify())
	return &plan{g: g, ws: b.ws, node: node, out: sel, width: int(g.Nodes[sel].Type.Shape.Inner().N), op: op, variant: variant}
}

// supported checks the backend's Supports against the declared options:
// it returns false (and the test passes) for a case declared unsupported
// that the backend refuses with a cause.
func (s *suite) supported(t *testing.T, p *plan) bool {
	n := p.g.Nodes[p.node]
	err := s.e.Supports(n, p.g)
	key := p.op
	if p.variant != "" {
		key += "/" + p.variant
	}
	if s.o.unsupported(p.op, p.variant) {
		require.Error(t, err, "%s: declared unsupported in Options.Unsupported, but %s.Supports accepts %s", key, s.e.Name(), n.Type)
		require.NotEmpty(t, err.Error(), "%s: Supports refused with an empty cause", key)
		t.Logf("%s: refused as declared: %v", key, err)
		return false
	}
	require.NoError(t, err, "%s.Supports refuses %s (%s); list %q in Options.Unsupported if that is intended", s.e.Name(), key, n.Type, key)
	return true
}

// skipped skips a case listed in Options.Skip, with the reason given.
func (s *suite) skipped(t *testing.T, op, variant string) bool {
	for _, k := range []string{op, op + "/" + variant} {
		if why, ok := s.o.Skip[k]; ok {
			t.Skipf("%s skipped by Options.Skip: %s", k, why)
			return true
		}
	}
	return false
}

// compile runs placement, optionally the weight layouts, and memory
// planning for maxTokens, then loads the graph on the backend. It returns
// whether any weight took a backend layout.
func (s *suite) compile(t *testing.T, p *plan, maxTokens int, layouts bool) (backends.Program, bool) {
	g := p.g.Clone()
	var packed []byte
	names := []string{"placement"}
	if layouts {
		names = append(names, "weight-layout")
	}
	names = append(names, "memory-plan")
	c := passes.Config{Backends: []backends.Backend{s.e}, Tokens: maxTokens, Weights: p.ws, Packed: &packed}
	list, err := passes.Select(c, names, nil, false)
	require.NoError(t, err)
	pl := passes.Pipeline{Passes: list}
	_, err = pl.Run(g)
	require.NoError(t, err, "passes %v", names)
	laid := false
	for _, n := range g.Nodes {
		laid = laid || n.Layout != nil
	}
	prog, err := s.e.Load(g, p.ws, backends.LoadOptions{MaxTokens: maxTokens, Threads: s.o.Threads, Packed: packed})
	require.NoError(t, err, "%s.Load failed on a graph whose nodes its Supports accepts: Supports should refuse what Load cannot run", s.e.Name())
	t.Cleanup(func() { closeIfCloser(t, prog) }) // after its States (cleanups run last-in first-out)
	require.Equal(t, maxTokens, prog.MaxTokens())
	return prog, laid
}

// session is one State with the sequence position it has reached.
type session struct {
	st  backends.State
	pos int
}

func (s *suite) session(t *testing.T, prog backends.Program, ctx int, kv backends.KVType, pos0 int) *session {
	st, err := prog.NewState(backends.StateOptions{Ctx: ctx, KVType: kv})
	require.NoError(t, err, "NewState")
	t.Cleanup(func() { closeIfCloser(t, st) })
	require.GreaterOrEqual(t, st.Context(), ctx)
	return &session{st: st, pos: pos0}
}

// step runs one batch of n random tokens at the session's next positions,
// selecting the rows p.pick returns (every batch row in random order when
// it is nil), and compares the result with the oracle under tol.
//
// It returns the largest ratio of a difference to its bound.
func (s *suite) step(t *testing.T, rng *rand.Rand, ss *session, p *plan, n int, want oracle, tol Tolerance) float64 {
	t.Helper()
	tokens := make([]int32, n)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(vocab))
	}
	positions := make([]int32, n)
	for i := range positions {
		positions[i] = int32(ss.pos + i)
	}
	var rows []int32
	if p.pick != nil {
		rows = p.pick(rng, n)
	} else {
		rows = make([]int32, n)
		for i, r := range rng.Perm(n) {
			rows[i] = int32(r)
		}
	}
	label := fmt.Sprintf("batch of %d at position %d", n, ss.pos)
	got, err := runGuarded(ss.st, backends.Batch{Tokens: tokens, Positions: positions, Rows: rows})
	require.NoError(t, err, "%s: Run", label)
	require.Len(t, got, len(rows)*p.width, "%s: Run returned %d values for %d rows of %d", label, len(got), len(rows), p.width)
	full, scale := want(tokens, ss.pos)
	ss.pos += n
	w := p.width
	sel := make([]float32, 0, len(got))
	var selScale []float64
	for _, r := range rows {
		sel = append(sel, full[int(r)*w:(int(r)+1)*w]...)
		if scale != nil {
			selScale = append(selScale, scale[int(r)*w:(int(r)+1)*w]...)
		}
	}
	return compare(t, label, got, sel, selScale, rows, w, tol)
}

// runGuarded turns a panic inside the backend into an error of this run,
// so one broken kernel fails its subtest instead of the whole binary.
func runGuarded(st backends.State, b backends.Batch) (out []float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return st.Run(b)
}

// mismatch is one element outside the tolerance.
type mismatch struct {
	i          int
	got, want  float32
	diff, over float64
}

// compare checks got against want element by element and fails with the
// worst offenders; it returns the largest ratio of a difference to its
// bound (0 for Exact).
func compare(t *testing.T, label string, got, want []float32, scale []float64, rows []int32, width int, tol Tolerance) float64 {
	t.Helper()
	var bad []mismatch
	worst := 0.0
	for i := range want {
		g, w := got[i], want[i]
		d := math.Abs(float64(g) - float64(w))
		if tol.Exact {
			if math.Float32bits(g) != math.Float32bits(w) {
				bad = append(bad, mismatch{i, g, w, d, math.Inf(1)})
			}
			continue
		}
		bound := tol.Abs
		if scale != nil {
			bound += tol.Rel * scale[i]
		}
		finite := !math.IsNaN(float64(g)) && !math.IsInf(float64(g), 0)
		if !finite || !(d <= bound) {
			bad = append(bad, mismatch{i, g, w, d, d / bound})
			continue
		}
		if bound > 0 {
			worst = max(worst, d/bound)
		}
	}
	if len(bad) == 0 {
		return worst
	}
	sort.SliceStable(bad, func(a, b int) bool { return bad[a].over > bad[b].over })
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s: %d of %d values outside %s; worst:", label, len(bad), len(want), tol)
	for _, m := range bad[:min(len(bad), 6)] {
		r := m.i / width
		fmt.Fprintf(&msg, "\n  batch row %d, column %d: got %g, want %g (|diff| %.3g, %d ulp",
			rows[r], m.i%width, m.got, m.want, m.diff, ulpDiff(m.got, m.want))
		if !tol.Exact {
			fmt.Fprintf(&msg, ", %.3g× the bound", m.over)
		}
		msg.WriteString(")")
	}
	require.Fail(t, msg.String())
	return math.Inf(1)
}

// report logs how close a passing case came to its tolerance.
func report(t *testing.T, tol Tolerance, worst float64) {
	t.Helper()
	if !tol.Exact {
		t.Logf("largest |diff|/bound %.3g (%s)", worst, tol)
	}
}

// absScale returns |x| per element: the scale of exact element-wise ops.
func absScale(x []float32) []float64 {
	s := make([]float64, len(x))
	for i, v := range x {
		s[i] = math.Abs(float64(v))
	}
	return s
}

// batchSizes are the batch sizes every stateless case runs, in order: one
// token (the decode path), odd prefill batches, then decode again.
func (s *suite) batchSizes() []int { return []int{1, 3, maxTokens, 1, 5} }

// maxTokens is the largest batch the suite compiles for: odd, and above
// 16 so that tiled kernels see a full tile and a remainder.
const maxTokens = 17

// runStateless compiles p (with and without backend layouts when the
// backend has any that apply) and runs the standard batches through one
// session, comparing each with want.
func (s *suite) runStateless(t *testing.T, p *plan, want oracle) {
	t.Helper()
	if s.skipped(t, p.op, p.variant) || !s.supported(t, p) {
		return
	}
	tol := s.o.tolerance(p.op, p.variant)
	run := func(t *testing.T, layouts bool) bool {
		prog, laid := s.compile(t, p, maxTokens, layouts)
		ss := s.session(t, prog, 64, backends.KVF16, 0)
		rng := s.rng(t)
		worst := 0.0
		for _, n := range s.batchSizes() {
			worst = max(worst, s.step(t, rng, ss, p, n, want, tol))
		}
		report(t, tol, worst)
		return laid
	}
	if _, ok := s.e.(backends.LayoutProvider); !ok {
		run(t, false)
		return
	}
	// With the backend's layouts (what a compiled plan runs), then, if any
	// weight took one, without (what a plan compiled without them runs).
	if run(t, true) {
		t.Run("gguf-layout", func(t *testing.T) { run(t, false) })
	}
}

// typeNames renders weight types for subtest names.
func typeName(t gguf.TensorType) string { return t.String() }

// weightTypes are the weight types the suite quantizes weights to.
var weightTypes = []gguf.TensorType{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
	gguf.TypeIQ4_NL, gguf.TypeIQ4_XS,
	gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS, gguf.TypeIQ3_S,
	gguf.TypeIQ1_S, gguf.TypeIQ1_M, gguf.TypeTQ1_0, gguf.TypeTQ2_0,
}

// WeightTypes lists the weight types the suite covers.
func WeightTypes() []gguf.TensorType { return slices.Clone(weightTypes) }

// closeIfCloser releases what a backend made closable (device memory, a
// device): a suite of hundreds of cases must not hold them all.
func closeIfCloser(t *testing.T, x any) {
	if c, ok := x.(io.Closer); ok {
		assert.NoError(t, c.Close(), "Close")
	}
}
