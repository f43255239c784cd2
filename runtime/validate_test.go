package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/sysmem"
)

// compiledPlan compiles the GGUF at src into dir/base.plan and returns the
// plan's JSON, the base for mutated copies written beside it (so they
// find the model and any side file).
func compiledPlan(t *testing.T, src, dir string) []byte {
	t.Helper()
	path := filepath.Join(dir, "base.plan")
	p, err := CompileTo(src, path, CompileOptions{Ctx: 64, Batch: 8})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// node returns the plan's node called name.
func node(t *testing.T, p *Plan, name string) *graph.Node {
	t.Helper()
	for _, n := range p.Graph.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %q", name)
	return nil
}

// openMutated writes base with mutate applied as dir/name.plan and opens
// it. A plan that opens must also run: a few batches and decode steps,
// which must not panic.
func openMutated(t *testing.T, dir, name string, base []byte, mutate func(p *Plan)) error {
	t.Helper()
	var p Plan
	require.NoError(t, json.Unmarshal(base, &p))
	mutate(&p)
	data, err := json.MarshalIndent(&p, "", " ")
	require.NoError(t, err)
	return openPlanBytes(t, dir, name, data)
}

func openPlanBytes(t *testing.T, dir, name string, data []byte) error {
	t.Helper()
	path := filepath.Join(dir, name+".plan")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	m, err := Open(path, Options{Threads: 3})
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := m.NewSession(SessionOptions{Ctx: 32})
	if err != nil {
		return err
	}
	if _, err := s.Eval([]int32{1, 403, 407, 261, 378, 30, 99, 12, 7, 250, 111}, true); err != nil {
		return err
	}
	for range 3 {
		if _, err := s.Step(42); err != nil {
			return err
		}
	}
	return nil
}

// TestPlanFieldsAreValidated damages a compiled plan of stories260K one
// field at a time: each must be refused with an error naming the problem
// (never a panic, never an allocation the machine cannot hold), and the
// model file must be untouched.
func TestPlanFieldsAreValidated(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "stories260K.gguf")
	copyFile(t, stories(t), src)
	before, err := os.ReadFile(src)
	require.NoError(t, err)
	base := compiledPlan(t, src, dir)
	require.NoError(t, openPlanBytes(t, dir, "unchanged", base), "the unchanged plan runs")

	type mutation struct {
		name   string
		mutate func(p *Plan)
		want   string // a regexp the error must match
	}
	buf := func(p *Plan, name string) *graph.Buffer { return node(t, p, name).Buffer }
	cases := []mutation{
		{"run.ctx negative", func(p *Plan) { p.Run.Ctx = -1 }, `plan field run\.ctx = -1: want 1 to 2147483647: recompile`},
		{"run.ctx huge", func(p *Plan) { p.Run.Ctx = 1 << 40 }, `plan field run\.ctx = 1099511627776: want 1 to`},
		{"run.batch negative", func(p *Plan) { p.Run.Batch = -8 }, `plan field run\.batch = -8: want 1 to`},
		{"run.batch wraps", func(p *Plan) { p.Run.Batch = 1 << 62 }, `plan field run\.batch = 4611686018427387904: want 1 to`},
		{"run.batch not the planned one", func(p *Plan) { p.Run.Batch = 7 }, `plan field graph\.memory\.tokens = 8: the buffers must be planned for run\.batch = 7`},
		{"run.batch and memory.tokens huge", func(p *Plan) { p.Run.Batch, p.Graph.Memory.Tokens = 1<<31-1, 1<<31-1 }, `buffer \[0, \+\d+\) does not hold 137438953408 values inside the \d+-element arena`},
		{"run.kv_type", func(p *Plan) { p.Run.KVType = "q3" }, `plan field run\.kv_type = "q3": want "f16", "f32", "q8_0" or "q4_0"`},
		{"run.kv_type", func(p *Plan) { p.Run.KVType = "q8_0" }, `plan field run\.kv_type = "q8_0": a q8_0 KV cache quantizes V, which needs flash attention`},
		{"run.flash_acc unknown", func(p *Plan) { p.Run.FlashAttn, p.Run.FlashAcc = true, "bf16" }, `plan field run\.flash_acc = "bf16": flash attention accumulator "bf16": want f16`},
		{"run.flash_acc without flash", func(p *Plan) { p.Run.FlashAcc = "f32" }, `plan field run\.flash_acc = "f32": .*add --flash-attn`},
		{"arena 0", func(p *Plan) { p.Graph.Memory.Arenas["cpu"] = 0 }, `does not hold \d+ values inside the 0-element arena`},
		{"arena negative", func(p *Plan) { p.Graph.Memory.Arenas["cpu"] = -4 }, `plan field graph\.memory\.arenas\.cpu = -4: want a size in bytes`},
		{"arena not whole floats", func(p *Plan) { p.Graph.Memory.Arenas["cpu"] += 2 }, `the cpu arena of \d+ bytes must be a multiple of 4 bytes`},
		{"arena huge", func(p *Plan) { p.Graph.Memory.Arenas["cpu"] = 1 << 60 }, `the cpu arena of 1152921504606846976 bytes is larger than its buffers need \(\d+ bytes\)`},
		{"arena of an unused backend", func(p *Plan) { p.Graph.Memory.Arenas["test-idle"] = 64 }, `plan field graph\.memory\.arenas = "test-idle": no node of the graph runs on that backend`},
		{"arena of an unknown backend", func(p *Plan) { p.Graph.Memory.Arenas["nosuch"] = 64 }, `plan field graph\.memory\.arenas = "nosuch": no backend "nosuch" in this build`},
		{"arena missing", func(p *Plan) { delete(p.Graph.Memory.Arenas, "cpu") }, `memory plan: no cpu arena`},
		{"buffer past the arena", func(p *Plan) { buf(p, "inp_embd").Offset = p.Graph.Memory.Arenas["cpu"] }, `node 4 \(GetRows "inp_embd"\): buffer \[\d+, \+2048\) does not hold 512 values inside the \d+-element arena`},
		{"buffer offset wraps", func(p *Plan) { buf(p, "inp_embd").Offset = math.MaxInt64 - 8 }, `node 4 \(GetRows "inp_embd"\): buffer .* does not hold`},
		{"buffer negative", func(p *Plan) { buf(p, "inp_embd").Offset = -131072 }, `does not hold`},
		{"buffer too small", func(p *Plan) { buf(p, "inp_embd").Size = 4 }, `buffer \[0, \+4\) does not hold 512 values`},
		{"buffer missing", func(p *Plan) { node(t, p, "inp_embd").Buffer = nil }, `buffer \(none\) does not hold`},
		{"buffer misaligned", func(p *Plan) { buf(p, "inp_embd").Offset = 2 }, `does not hold`},
		{"view moved", func(p *Plan) { buf(p, "blk.0.k").Offset -= 4 }, `node \d+ \(Part "blk\.0\.k"\): view buffer is not at its part of node \d+`},
		{"output id 0", func(p *Plan) { p.Graph.Outputs["logits"] = 0 }, `plan field graph\.outputs\.logits = 0: node 0 \(Input "tokens"\) is I32\[T\], want rows of params\.vocab_size = 512 logits`},
		{"output id out of range", func(p *Plan) { p.Graph.Outputs["logits"] = 100000 }, `output "logits" refers to missing node 100000`},
		{"output a weight", func(p *Plan) { p.Graph.Outputs["logits"] = node(t, p, "output.weight").ID }, `plan field graph\.outputs\.logits = 113: node 113 \(Weight "output\.weight"\) is F32\[512,64\], want rows of params\.vocab_size = 512 logits`},
		{"output missing", func(p *Plan) { delete(p.Graph.Outputs, "logits") }, `plan field graph\.outputs has no "logits"`},
		{"vocab_size", func(p *Plan) { p.Params.VocabSize = 100 }, `want rows of params\.vocab_size = 100 logits`},
		{"input missing", func(p *Plan) { delete(p.Graph.Inputs, "rows") }, `graph input "rows" is missing`},
		{"inputs aliased", func(p *Plan) { p.Graph.Inputs["positions"] = p.Graph.Inputs["tokens"] }, `graph inputs "tokens" and "positions" are the same node 0`},
		{"input not an Input", func(p *Plan) { p.Graph.Inputs["rows"] = 3 }, `graph input "rows" refers to node 3, which is not an Input node`},
		{"input of another shape", func(p *Plan) { node(t, p, "rows").Type.Shape = graph.S(5) }, `invalid graph: node 110 \(SelectRows "out_rows", layer -1\): stored type F32\[R,64\], inferred F32\[5,64\]`},
		{"extra input", func(p *Plan) { p.Graph.Inputs["mask"] = 1 }, `graph input "mask": the CPU backend binds only tokens, positions and rows`},
		{"weight on a smaller tensor", func(p *Plan) { node(t, p, "token_embd.weight").Tensor = "blk.0.attn_q.weight" }, `weight "blk\.0\.attn_q\.weight" has dims \[64 64\] in the file \(innermost first\), shape \[512,64\] in the graph`},
		{"weight shape larger", func(p *Plan) { node(t, p, "token_embd.weight").Type.Shape = graph.S(100000, 64) }, `weight "token_embd\.weight" has dims \[64 512\] in the file`},
		{"weight type", func(p *Plan) { node(t, p, "token_embd.weight").Type.DType = gguf.TypeF16 }, `weight "token_embd\.weight" has type F32 in the file, F16 in the graph`},
		{"weight not in the file", func(p *Plan) { node(t, p, "output.weight").Tensor = "nope" }, `weight "nope" is not in the model file`},
		{"weight layout without side file", func(p *Plan) {
			node(t, p, "output.weight").Layout = &graph.Layout{Name: "q4_0x16", Offset: 0, Size: 100}
		}, `weight "output\.weight": layout "q4_0x16" does not fit a F32\[512,64\]`},
		{"norm weight as a matrix", func(p *Plan) { w := node(t, p, "blk.0.attn_norm.weight"); w.Type.Shape = graph.S(1, 64) }, `node \d+ \(RMSNormMul "blk\.0\.attn_norm\+attn_norm_w"\): operand 1: node \d+ \(Weight "blk\.0\.attn_norm\.weight"\) is F32\[1,64\], want a 1-D F32 weight`},
		{"symbolic weight", func(p *Plan) { node(t, p, "token_embd.weight").Type.Shape = graph.Shape{graph.Tokens, graph.D(64)} }, `a weight's shape \[T,64\] must be constant`},
		{"unknown symbol", func(p *Plan) { node(t, p, "tokens").Type.Shape = graph.Shape{{Sym: "X"}} }, `stored type F32\[T,64\], inferred F32\[X,64\]`},
		{"attention heads", func(p *Plan) { node(t, p, "blk.0.attn").Attrs["heads"] = 1 << 40 }, `do not match 1099511627776 heads, 4 kv heads of 8`},
		{"attention head_dim fraction", func(p *Plan) { a := node(t, p, "blk.0.attn").Attrs; a["head_dim"] += 0.5 }, `attribute head_dim = 8\.5 must be a whole number`},
		{"rope heads", func(p *Plan) { node(t, p, "blk.0.q_rope").Attrs["heads"] = 1 << 30 }, `heads 1073741824 × head_dim 8 does not match width 64`},
		{"part start", func(p *Plan) { node(t, p, "blk.0.k").Attrs["start"] = 1 << 40 }, `columns \[1099511627776, 1099511627808\) outside F32\[T,128\]`},
		{"no memory plan, huge batch", func(p *Plan) { p.Graph.Memory = nil; p.Run.Batch = 1<<31 - 1 }, `a session with a context of 32 tokens needs .* of memory .*activations .* for batches of 2147483647 tokens\) but .* is available .*: recompile with a smaller batch \(graphc compile --batch\)`},
		{"op without a kernel", func(p *Plan) { node(t, p, "blk.0.attn").Op = "Dequantize" }, `node \d+ \(Dequantize "blk\.0\.attn", layer 0\): takes 1 inputs, got 4`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := openMutated(t, dir, fmt.Sprintf("m%d", i), base, c.mutate)
			require.Error(t, err, "the damaged plan was accepted and ran")
			assert.Regexp(t, regexp.MustCompile(c.want), err.Error())
			if !strings.HasPrefix(err.Error(), "a session") {
				assert.Regexp(t, `^plan file .*/m\d+\.plan: .*: recompile it with graphc compile$`, err.Error())
			}
		})
	}
	after, err := os.ReadFile(src)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(before, after), "the model file changed")
}

// TestPackedLayoutsAreValidated damages the repacked-weight ranges of a
// plan with a side file.
func TestPackedLayoutsAreValidated(t *testing.T) {
	if !simd.HasPackedKernels(gguf.TypeQ4_0) {
		t.Skip("this build (" + simd.Variant() + ") has no packed kernels, so nothing is repacked")
	}
	dir := t.TempDir()
	base := compiledPlan(t, synthQ4(t, dir, 5), dir)
	require.NoError(t, openPlanBytes(t, dir, "unchanged", base))
	layout := func(p *Plan) *graph.Layout {
		for _, n := range p.Graph.Nodes {
			if n.Layout != nil {
				return n.Layout
			}
		}
		t.Fatal("no repacked weight")
		return nil
	}
	for i, c := range []struct {
		name   string
		mutate func(p *Plan)
		want   string
	}{
		{"past the side file", func(p *Plan) { layout(p).Offset = 1 << 40 }, `layout q4_0x16 range \[1099511627776, \+\d+\) does not hold its \d+ bytes inside the \d+-byte repacked data`},
		{"offset wraps", func(p *Plan) { layout(p).Offset = math.MaxInt64 }, `does not hold its`},
		{"size short", func(p *Plan) { layout(p).Size = 16 }, `range \[\d+, \+16\) does not hold its \d+ bytes`},
		{"negative", func(p *Plan) { layout(p).Offset = -1 }, `does not hold its`},
		{"unknown layout", func(p *Plan) { layout(p).Name = "bogus" }, `layout "bogus" does not fit a Q4_0`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := openMutated(t, dir, fmt.Sprintf("m%d", i), base, c.mutate)
			require.Error(t, err)
			assert.Regexp(t, c.want, err.Error())
			assert.Contains(t, err.Error(), "recompile it with graphc compile")
		})
	}
}

// TestRandomPlanNumbers sets random numbers of a compiled plan to random
// or extreme values: whatever Open accepts must run without a panic (a
// panic fails the test run), and whatever it refuses it refuses with an
// error.
func TestRandomPlanNumbers(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "stories260K.gguf")
	copyFile(t, stories(t), src)
	base := compiledPlan(t, src, dir)
	numbers := regexp.MustCompile(`-?\b\d+(\.\d+)?([eE][-+]?\d+)?\b`)
	locs := numbers.FindAllIndex(base, -1)
	extremes := []string{"0", "-1", "1", "2", "3", "7", "64", "512", "4294967296", "2147483647", "9223372036854775807", "-9223372036854775808", "1e300", "0.5"}
	rng := rand.New(rand.NewPCG(1, 2))
	runs, accepted := 100, 0
	if testing.Short() {
		runs = 20
	}
	for i := range runs {
		data := append([]byte(nil), base...)
		for range 1 + rng.IntN(3) {
			loc := locs[rng.IntN(len(locs))]
			v := extremes[rng.IntN(len(extremes))]
			if rng.IntN(2) == 0 {
				v = strconv.FormatInt(rng.Int64N(1<<20)-4, 10)
			}
			data = append(append(append([]byte(nil), data[:loc[0]]...), v...), data[loc[1]:]...)
			locs = numbers.FindAllIndex(data, -1)
		}
		if openPlanBytes(t, dir, fmt.Sprintf("r%d", i), data) == nil {
			accepted++
		}
		locs = numbers.FindAllIndex(base, -1)
	}
	t.Logf("%d of %d damaged plans were accepted and ran", accepted, runs)
}

// TestHugeSizesAreRefused asks for contexts and batches that overflow or
// exceed the machine through the library: each is refused with a message
// that says how much memory it needs and what to change, before any
// allocation.
func TestHugeSizesAreRefused(t *testing.T) {
	defer sysmem.SetForTest(sysmem.Memory{Bytes: 20 << 30, Source: "test"})()
	// Two threads: the attention scratch is per thread, so the figures
	// below hold on any machine.
	m, err := Open(stories(t), Options{Threads: 2})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	for _, c := range []struct {
		ctx  int
		kv   string
		want string
	}{
		{1_000_000_000, "", `^a session with a context of 1000000000 tokens needs 774\.9 GiB of memory \(KV cache 596\.0 GiB, 640 B per position; attention scratch 178\.8 GiB; activations [\d.]+ MiB for batches of 512 tokens\) but 20\.0 GiB is available \(test\): use a smaller context \(--ctx 2\d{7} fits now\)$`},
		{1_000_000_000, "f32", `KV cache 1\.2 TiB, 1\.2 KiB per position`},
		{cpu.MaxContext, "", `context of 2147483647 tokens needs`},
		{cpu.MaxContext + 1, "", `^context of 2147483648 tokens: want 1 to 2147483647 \(--ctx\)$`},
		{math.MaxInt, "", `want 1 to 2147483647`},
		{-5, "", `context of -5 tokens: want 1 to`},
	} {
		_, err := m.NewSession(SessionOptions{Ctx: c.ctx, KVType: c.kv})
		require.Error(t, err, "ctx %d", c.ctx)
		assert.Regexp(t, c.want, err.Error())
	}
	// Threads out of range are the caller's to change, not the plan's.
	t.Run("threads", func(t *testing.T) {
		m, err := Open(stories(t), Options{Threads: 100000})
		require.Error(t, err)
		assert.EqualError(t, err, "100000 threads: want 1 to 512, or 0 for all cores (--threads)")
		if m != nil {
			m.Close()
		}
		dir := t.TempDir()
		p, err := CompileTo(stories(t), filepath.Join(dir, "m.plan"), CompileOptions{})
		require.NoError(t, err)
		p.Close()
		_, err = Open(filepath.Join(dir, "m.plan"), Options{Threads: -2})
		assert.EqualError(t, err, "-2 threads: want 1 to 512, or 0 for all cores (--threads)", "the plan is not at fault")
	})
	s, err := m.NewSession(SessionOptions{Ctx: 4096})
	require.NoError(t, err, "a context that fits")
	_, err = s.Eval([]int32{1, 2, 3}, false)
	require.NoError(t, err)
}

// TestCompileOptionsBounds checks the context and batch a plan is
// compiled for, through CompileOptions and Open on a GGUF.
func TestCompileOptionsBounds(t *testing.T) {
	for _, c := range []struct {
		o         CompileOptions
		want      string // error, or "" with the resolved ctx and batch
		ctx, batc int
	}{
		{o: CompileOptions{Ctx: 1 << 40}, want: `^context of 1099511627776 tokens: want 1 to 2147483647 \(--ctx\)$`},
		{o: CompileOptions{Ctx: -1}, want: `context of -1 tokens`},
		{o: CompileOptions{Batch: -1}, want: `^batch of -1 tokens: want 1 or more \(--batch\)$`},
		{o: CompileOptions{Batch: 1 << 62}, ctx: 2048, batc: 2048},             // capped at the context, as llama.cpp does
		{o: CompileOptions{Batch: math.MaxInt}, ctx: 2048, batc: 2048},         // no wrap
		{o: CompileOptions{Ctx: 1_000_000_000}, ctx: 1_000_000_000, batc: 512}, // beyond the training context, as llama.cpp allows
		{o: CompileOptions{Ctx: 1_000_000_000, Batch: 1_000_000_000}, ctx: 1_000_000_000, batc: 1_000_000_000},
		{o: CompileOptions{}, ctx: 2048, batc: 512},
		{o: CompileOptions{FlashAcc: "f32"}, want: `add --flash-attn`},
		{o: CompileOptions{FlashAttn: true, FlashAcc: "f64"}, want: `accumulator "f64": want f16`},
		{o: CompileOptions{FlashAttn: true, FlashAcc: "f32"}, ctx: 2048, batc: 512},
	} {
		p, err := Compile(stories(t), c.o)
		if c.want != "" {
			require.Error(t, err, "%+v", c.o)
			assert.Regexp(t, c.want, err.Error())
			continue
		}
		require.NoError(t, err, "%+v", c.o)
		assert.Equal(t, c.ctx, p.Run.Ctx, "%+v", c.o)
		assert.Equal(t, c.batc, p.Run.Batch, "%+v", c.o)
		assert.Equal(t, c.o.FlashAcc, p.Run.FlashAcc, "%+v", c.o)
		p.Close()
	}

	defer sysmem.SetForTest(sysmem.Memory{Bytes: 20 << 30, Source: "test"})()
	m, err := Open(stories(t), Options{Compile: CompileOptions{Ctx: 1_000_000_000, Batch: 1_000_000_000}})
	require.NoError(t, err, "compiling allocates no arena")
	defer m.Close()
	_, err = m.NewSession(SessionOptions{})
	require.Error(t, err)
	assert.Regexp(t, `^a session with a context of 1000000000 tokens needs [\d.]+ TiB of memory .* activations [\d.]+ TiB for batches of 1000000000 tokens\) but 20\.0 GiB is available \(test\): recompile with a smaller batch \(graphc compile --batch\); even a context of 1 token does not fit$`, err.Error())
}

// idleBackend is registered so that a plan can name a backend that exists
// but runs none of its nodes.
type idleBackend struct{}

func init() { backends.Register(idleBackend{}) }

func (idleBackend) Name() string { return "test-idle" }
func (idleBackend) Supports(*graph.Node, *graph.Graph) error {
	return errors.New("runs nothing")
}
func (idleBackend) Load(*graph.Graph, backends.Weights, backends.LoadOptions) (backends.Program, error) {
	return nil, errors.New("runs nothing")
}
