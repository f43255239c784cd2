package runtime

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/runtime/tapdump"
)

// tapTol is the agreement the CPU and Vulkan backends reach on
// stories260K: attention over the binary16 KV cache rounds at other
// points on the GPU (last layer up to 1.5e-3 of the value's scale).
const tapTol = 5e-3

// dumpRun generates n greedy tokens from model on backend with every node
// tapped into a new dump folder, and returns the folder.
func dumpRun(t *testing.T, model, backend, pattern string, n int) string {
	t.Helper()
	return dumpRunWith(t, model, backend, CompileOptions{Backend: backend}, n, pattern)
}

// dumpRunWith is dumpRun with compile options (every node tapped unless
// a pattern is given).
func dumpRunWith(t *testing.T, model, backend string, co CompileOptions, n int, pattern ...string) string {
	t.Helper()
	if len(pattern) == 0 {
		pattern = []string{"*"}
	}
	dir := filepath.Join(t.TempDir(), "dump")
	m, err := Open(model, Options{Backend: backend, Taps: pattern[0], Compile: co})
	require.NoError(t, err)
	defer m.Close()
	w, err := tapdump.Create(dir, tapdump.Meta{Source: model, Backend: m.Backend, Pattern: pattern[0]})
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{Tap: func(ti TapInfo, v []float32) error {
		return w.Write(tapdump.Entry{Step: ti.Step, Pos: ti.Pos, Node: ti.Node, Name: ti.Name, Op: ti.Op, Layer: ti.Layer, Backend: ti.Backend, Rows: ti.Rows, Width: ti.Width}, v)
	}})
	require.NoError(t, err)
	_, err = s.Generate(context.Background(), "Once upon a time", greedy(n), nil)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return dir
}

func diffDumps(t *testing.T, a, b string) *tapdump.Report {
	t.Helper()
	da, err := tapdump.Read(a)
	require.NoError(t, err)
	db, err := tapdump.Read(b)
	require.NoError(t, err)
	r, err := tapdump.Diff(da, db, tapTol)
	require.NoError(t, err)
	return r
}

// A tapped CPU session sees every computed value of every batch, in
// execution order, each [rows, width] of its node.
func TestTapSeesEveryNode(t *testing.T) {
	m, err := Open(stories(t), Options{Taps: "*"})
	require.NoError(t, err)
	defer m.Close()
	var seen []TapInfo
	s, err := m.NewSession(SessionOptions{Tap: func(ti TapInfo, v []float32) error {
		assert.Len(t, v, ti.Rows*ti.Width, ti.Name)
		seen = append(seen, ti)
		return nil
	}})
	require.NoError(t, err)
	_, err = s.Eval([]int32{1, 400, 52, 9}, false)
	require.NoError(t, err)
	_, err = s.Step(12)
	require.NoError(t, err)
	computed := 0
	for _, n := range m.Plan.Graph.Nodes {
		if n.Op != "Input" && n.Op != "Weight" && n.Op != "MatMulQKV" {
			computed++
		}
	}
	require.Len(t, seen, 2*computed)
	assert.Equal(t, "inp_embd", seen[0].Name)
	assert.Equal(t, 4, seen[0].Rows)
	assert.Equal(t, 0, seen[0].Step)
	last := seen[len(seen)-1]
	assert.Equal(t, "result_output", last.Name)
	assert.Equal(t, TapInfo{Node: last.Node, Name: "result_output", Op: "MatMul", Layer: -1, Backend: "cpu", Step: 1, Pos: 4, Rows: 1, Width: 512}, last)
}

// A session without Tap, or a pattern matching nothing, is refused or
// silent as documented; a tap's error stops the batch and leaves the
// session as it was.
func TestTapErrors(t *testing.T) {
	_, err := Open(stories(t), Options{Taps: "no-such-node"})
	assert.ErrorContains(t, err, "matches no computed node")
	_, err = MatchNodes(" , ")
	assert.ErrorContains(t, err, "empty tap pattern")
	_, err = MatchNodes("[")
	assert.ErrorContains(t, err, "syntax error")

	m := openStories(t)
	_, err = m.NewSession(SessionOptions{Tap: func(TapInfo, []float32) error { return nil }})
	assert.ErrorContains(t, err, "open it with Options.Taps")

	tm, err := Open(stories(t), Options{Taps: "blk.*.l_out"})
	require.NoError(t, err)
	defer tm.Close()
	calls := 0
	s, err := tm.NewSession(SessionOptions{Tap: func(ti TapInfo, v []float32) error {
		calls++
		assert.Equal(t, "MatMulAdd", ti.Op)
		assert.True(t, strings.HasSuffix(ti.Name, "+l_out"), ti.Name)
		if ti.Layer == 2 {
			panic("tap broke")
		}
		return nil
	}})
	require.NoError(t, err)
	_, err = s.Eval([]int32{1, 400}, false)
	assert.ErrorContains(t, err, "tap panicked: tap broke")
	assert.Equal(t, 3, calls, "layers 0, 1 and 2")
	assert.Equal(t, 0, s.Pos())
}

// Dumps of the same model agree; a model whose blk.2.ffn_norm weight was
// changed (another "build") is reported as diverging first at the node
// that reads it, with everything before it agreeing.
func TestTensorDiffFindsFirstDivergence(t *testing.T) {
	base := dumpRun(t, stories(t), "cpu", "*", 3)
	again := dumpRun(t, stories(t), "cpu", "*", 3)
	r := diffDumps(t, base, again)
	require.Equal(t, -1, r.First)
	for _, c := range r.Compared {
		require.Zero(t, c.MaxAbs, "step %d %s: the CPU is deterministic", c.Step, c.Name)
	}

	changed := filepath.Join(t.TempDir(), "changed.gguf")
	scaleTensor(t, stories(t), changed, "blk.2.ffn_norm.weight", 1.5)
	other := dumpRun(t, changed, "cpu", "*", 3)
	r = diffDumps(t, base, other)
	require.GreaterOrEqual(t, r.First, 0)
	first := r.Compared[r.First]
	assert.Equal(t, "blk.2.ffn_norm+ffn_norm_w", first.Name)
	assert.Equal(t, 0, first.Step)
	assert.Greater(t, first.Rel, 0.1)
	for _, c := range r.Compared[:r.First] {
		assert.Zero(t, c.MaxAbs, "%s before the changed weight", c.Name)
	}
	assert.Empty(t, r.OnlyA)
	assert.Empty(t, r.OnlyB)
}

// The Vulkan backend's values, copied to the host after each step, agree
// with the CPU's node by node within tapTol, in the same order and
// shapes.
func TestTensorDiffCPUAgainstVulkan(t *testing.T) {
	skipWithoutVulkanDevice(t)
	cpu := dumpRun(t, stories(t), "cpu", "*", 4)
	gpu := dumpRun(t, stories(t), "vulkan", "*", 4)
	r := diffDumps(t, cpu, gpu)
	require.NotEmpty(t, r.Compared)
	assert.Empty(t, r.OnlyA)
	assert.Empty(t, r.OnlyB)
	if r.First >= 0 {
		c := r.Compared[r.First]
		t.Fatalf("CPU and Vulkan first differ at step %d %q: rel %.3g", c.Step, c.Name, c.Rel)
	}
	d, err := tapdump.Read(gpu)
	require.NoError(t, err)
	assert.Equal(t, "vulkan", d.Meta.Backend)
	vk := 0
	for _, e := range d.Entries {
		if e.Backend == "vulkan" {
			vk++
		}
	}
	assert.Greater(t, vk, len(d.Entries)/2, "most values come from the GPU")
}

// scaleTensor copies a GGUF with one F32 tensor's values multiplied by f.
func scaleTensor(t *testing.T, src, dst, tensor string, f float32) {
	t.Helper()
	g, err := gguf.Open(src)
	require.NoError(t, err)
	ti, ok := g.Tensor(tensor)
	require.True(t, ok)
	require.Equal(t, gguf.TypeF32, ti.Type)
	off := g.DataOffset + int64(ti.Offset)
	size := int64(ti.Size)
	require.NoError(t, g.Close())
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	for i := off; i < off+size; i += 4 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))
		binary.LittleEndian.PutUint32(data[i:], math.Float32bits(v*f))
	}
	require.NoError(t, os.WriteFile(dst, data, 0o644))
}
