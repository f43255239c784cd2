package runtime

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// profileGraph is x -> RMSNorm -> MatMul(Q4_0 64x256) -> Add(x') -> Attention.
func profileGraph(t *testing.T) *graph.Graph {
	g := &graph.Graph{}
	add := func(op, name string, typ graph.Type, attrs graph.Attrs, in ...int) int {
		g.Nodes = append(g.Nodes, &graph.Node{ID: len(g.Nodes), Op: op, Name: name, Type: typ, Attrs: attrs, Inputs: in, Layer: -1})
		return len(g.Nodes) - 1
	}
	act := graph.Type{DType: graph.F32, Shape: graph.S(graph.Tokens, 256)}
	x := add("Input", "x", act, nil)
	w := add("Weight", "w", graph.Type{DType: gguf.TypeQ4_0, Shape: graph.S(64, 256)}, nil)
	n := add(ops.RMSNorm, "norm", act, nil, x)
	m := add(ops.MatMul, "mm", graph.Type{DType: graph.F32, Shape: graph.S(graph.Tokens, 64)}, nil, n, w)
	a := add(ops.Attention, "attn", graph.Type{DType: graph.F32, Shape: graph.S(graph.Tokens, 64)}, graph.Attrs{"heads": 2, "kv_heads": 1, "head_dim": 32}, m, m, m, x)
	require.Equal(t, 4, a)
	return g
}

// TestBuildPhase checks the table: times per step, shares, kinds, the
// byte and FLOP estimates and the rates from them.
func TestBuildPhase(t *testing.T) {
	g := profileGraph(t)
	raw := backends.StepProfile{Tokens: 1, Steps: 4, Dispatches: 20, Barriers: 16, Submits: 4, Clock: "gpu", Spans: []backends.Span{
		{Node: 2, Label: "RMSNorm", Count: 4, Time: 40 * time.Microsecond},
		{Node: 3, Label: "quantize_q8_0", Count: 4, Time: 20 * time.Microsecond},
		{Node: 3, Label: "MatMul q4_0 64x256", Count: 4, Time: 100 * time.Microsecond},
		{Node: 4, Label: "Attention", Count: 4, Time: 40 * time.Microsecond},
	}}
	ph := buildPhase(g, raw, 10, backends.KVF16)
	assert.Equal(t, "decode", ph.Name)
	assert.InDelta(t, 50.0, ph.US, 1e-9, "200 µs over 4 steps")
	assert.InDelta(t, 5.0, ph.Dispatches, 1e-9)
	assert.InDelta(t, 4.0, ph.Barriers, 1e-9)
	assert.InDelta(t, 1.0, ph.Submits, 1e-9)
	require.Len(t, ph.Nodes, 3)
	mm := ph.Nodes[0]
	assert.Equal(t, 3, mm.ID, "the matmul takes most time")
	assert.Equal(t, "MatMul Q4_0 64x256", mm.Kind)
	assert.InDelta(t, 30.0, mm.US, 1e-9, "quantization and matmul, per step")
	assert.InDelta(t, 0.6, mm.Share, 1e-9)
	require.Len(t, mm.Parts, 2)
	assert.Equal(t, "quantize_q8_0", mm.Parts[0].Label)
	// 64×256 Q4_0 (18 bytes a 32-block): 9216; 256 f32 in, 64 out.
	assert.Equal(t, int64(9216+4*256+4*64), mm.Bytes)
	assert.Equal(t, int64(2*64*256), mm.FLOPs)
	assert.InDelta(t, float64(mm.Bytes)/30e3, mm.GBs, 1e-9)
	assert.InDelta(t, float64(mm.FLOPs)/30e6, mm.TFLOPs, 1e-12)
	attn := ph.Nodes[1:][0]
	if attn.ID != 4 {
		attn = ph.Nodes[2]
	}
	assert.Equal(t, 4, attn.ID)
	// 10 cells of K and V, 32 f16 values each; 4 FLOPs per head value per cell.
	assert.Equal(t, int64(4*64+4*256+4*64+2*10*32*2), attn.Bytes, "q, k, v (one value), pos, output and the cache")
	assert.Equal(t, int64(4*64*10), attn.FLOPs)
	var share float64
	for _, n := range ph.Nodes {
		share += n.Share
	}
	assert.InDelta(t, 1.0, share, 1e-9)
	require.Len(t, ph.Kinds, 3)
	assert.Equal(t, "MatMul Q4_0 64x256", ph.Kinds[0].Kind)
	assert.Equal(t, []ProfileNoted(nil), ph.Untimed, "every computed node was timed")

	raw.Spans = raw.Spans[1:]
	ph = buildPhase(g, raw, 10, backends.KVF16)
	assert.Equal(t, []ProfileNoted{{ID: 2, Name: "norm", Op: ops.RMSNorm}}, ph.Untimed)
}

func TestProfileMatch(t *testing.T) {
	g := profileGraph(t)
	ph := ProfilePhase{Nodes: []ProfileNode{
		{ID: 3, Name: "mm", Op: ops.MatMul},                    // by ID
		{ID: 9, Name: "attn", Op: ops.Attention},               // by name: another numbering
		{ID: 2, Name: "other", Op: ops.RMSNorm},                // ID taken by another name: missing
		{ID: 1, Name: "mm", Op: ops.MatMul, US: 1},             // mm is matched already: missing
		{ID: 40, Name: "gone", Op: ops.Add, US: 2, Share: 0.1}, // not in the graph
	}}
	found, missing := ph.Match(g)
	assert.Len(t, found, 2)
	assert.Equal(t, "mm", found[3].Name)
	assert.Equal(t, 9, found[4].ID)
	require.Len(t, missing, 3)
	assert.Equal(t, "other", missing[0].Name)
}

func TestProfileJSON(t *testing.T) {
	p := &Profile{Format: ProfileFormat, Version: ProfileVersion, Model: "m.gguf", Backend: "cpu",
		Phases: []ProfilePhase{{Name: "prefill 8", Tokens: 8}, {Name: "decode", Tokens: 1, Nodes: []ProfileNode{{ID: 3, Name: "mm", US: 2}}}}}
	var b bytes.Buffer
	require.NoError(t, p.WriteJSON(&b))
	q, err := DecodeProfile(&b)
	require.NoError(t, err)
	assert.Equal(t, p, q)

	ph, err := q.Phase("")
	require.NoError(t, err)
	assert.Equal(t, "decode", ph.Name, "decode by default")
	ph, err = q.Phase("prefill 8")
	require.NoError(t, err)
	assert.Equal(t, 8, ph.Tokens)
	_, err = q.Phase("prefill 9")
	assert.ErrorContains(t, err, `no phase "prefill 9" (it has "prefill 8", "decode")`)
	_, err = (&Profile{}).Phase("")
	assert.ErrorContains(t, err, "no phases")

	for _, c := range []struct{ in, want string }{
		{`{"format":"weft-profile","version":99}`, "profile version 99"},
		{`{"nodes":[]}`, "not a weft profile"},
		{`not json`, "not a weft profile"},
	} {
		_, err := DecodeProfile(strings.NewReader(c.in))
		assert.ErrorContains(t, err, c.want, c.in)
	}
	_, err = ReadProfile(filepath.Join(t.TempDir(), "none.json"))
	assert.ErrorContains(t, err, "no such file")
}

// TestBenchProfileCPU: the profile covers the timed runs only and every
// computed node the CPU runs.
func TestBenchProfileCPU(t *testing.T) {
	m := openStories(t)
	res, err := m.Bench(BenchOptions{PromptTokens: 8, GenTokens: 3, Reps: 2, Depth: 4, Profile: true})
	require.NoError(t, err)
	p := res.Profile
	require.NotNil(t, p)
	require.Len(t, p.Phases, 2)
	dec, pre := p.Phases[0], p.Phases[1]
	assert.Equal(t, "decode", dec.Name)
	assert.Equal(t, 6, dec.Steps, "2 timed runs of 3 tokens; the warm-up and the depth fill left out")
	assert.InDelta(t, 4+2, dec.KVCells, 1e-9, "depth 4, then 1 to 3 tokens")
	assert.Equal(t, "prefill 8", pre.Name)
	assert.Equal(t, 2, pre.Steps)
	assert.Equal(t, "wall", dec.Clock)
	assert.Equal(t, ProfileCompile{Batch: m.Plan.Run.Batch, Ctx: m.Plan.Run.Ctx, KVType: "f16"}, p.Compile)
	found, missing := dec.Match(m.Plan.Graph)
	assert.Empty(t, missing)
	computed := 0
	for _, n := range m.Plan.Graph.Nodes {
		if n.Op != "Input" && n.Op != "Weight" {
			computed++
		}
	}
	assert.Equal(t, computed, len(found)+len(dec.Untimed))
	assert.Greater(t, len(found), computed/2)
	assert.Greater(t, dec.US, 0.0)
	assert.Greater(t, dec.GBs, 0.0)

	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Profile()
	assert.ErrorContains(t, err, "StartProfile first")
}

// TestBenchProfileVulkan: every timed span belongs to a node placed on
// Vulkan, including a plan split across Vulkan and the CPU.
func TestBenchProfileVulkan(t *testing.T) {
	skipWithoutVulkanDevice(t)
	m, err := Open(stories(t), Options{Backend: "vulkan", Compile: CompileOptions{Backend: "vulkan", Batch: 8}})
	require.NoError(t, err)
	defer m.Close()
	res, err := m.Bench(BenchOptions{PromptTokens: 8, GenTokens: 2, Reps: 1, Profile: true})
	require.NoError(t, err)
	require.Len(t, res.Profile.Phases, 2)
	dec := res.Profile.Phases[0]
	assert.Equal(t, "gpu", dec.Clock)
	assert.Equal(t, 2, dec.Steps)
	assert.Equal(t, 1.0, dec.Submits)
	assert.Greater(t, dec.Dispatches, 10.0)
	found, missing := dec.Match(m.Plan.Graph)
	assert.Empty(t, missing)
	for id, pn := range found {
		assert.Equal(t, "vulkan", m.Plan.Graph.Nodes[id].Backend, "%d %s", id, pn.Name)
	}
	ops := map[string]bool{}
	for _, n := range dec.Nodes {
		ops[n.Op] = true
	}
	assert.True(t, ops["Attention"] && ops["MatMulQKV"] && ops["RMSNormMul"], "%v", ops)

	// A split plan: attention (512-wide heads) on the CPU.
	dir := t.TempDir()
	model := writeWideModel(t, dir)
	wide, err := Open(model, Options{Backend: "vulkan", Compile: CompileOptions{Ctx: 64, Batch: 4, Backend: "vulkan"}})
	require.NoError(t, err)
	defer wide.Close()
	res, err = wide.Bench(BenchOptions{PromptTokens: 4, GenTokens: 3, Reps: 1, Profile: true})
	require.NoError(t, err)
	dec = res.Profile.Phases[0]
	assert.Equal(t, 3, dec.Steps, "a step is one run of every split")
	assert.Equal(t, "mixed", dec.Clock)
	placed := map[string]int{}
	found, missing = dec.Match(wide.Plan.Graph)
	assert.Empty(t, missing)
	for id := range found {
		placed[wide.Plan.Graph.Nodes[id].Backend]++
	}
	assert.Positive(t, placed["cpu"], "attention on the CPU")
	assert.Positive(t, placed["vulkan"])
}
