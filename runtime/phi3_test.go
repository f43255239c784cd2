package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// phi3Fixtures are small random-weight Phi-3 models written by
// writePhi3 (stories260K's vocabulary): "synth-phi3" as Phi-3-mini-4k is
// laid out (fused attn_qkv and gate-up ffn_up) with an 8-position sliding
// window, "synth-phi3-longrope" as Phi-3-mini-128k (LongRoPE short and
// long factors, an attention factor, original context 4096: the
// references' context of 512 reads the short factors) and
// "synth-phi3-longrope-256", the same with an original context of 256, so
// that 512 reads the long ones. testdata/phi3/README.md says how their
// llama.cpp references were made.
var phi3Fixtures = map[string]phi3Shape{
	"synth-phi3":              {ctxTrain: 4096, window: 8}, // the prompts outgrow the window
	"synth-phi3-longrope":     {ctxTrain: 131072, window: 262144, origCtx: 4096},
	"synth-phi3-longrope-256": {ctxTrain: 131072, window: 262144, origCtx: 256},
}

// phi3Shape is a fixture's context, window and, when origCtx is set,
// LongRoPE factors with that original context.
type phi3Shape struct {
	ctxTrain, window, origCtx int
}

// Dimensions of the fixtures: 4 heads of 16 over 2 KV heads.
const (
	phi3Embd, phi3Heads, phi3KVHeads, phi3FFN, phi3Layers = 64, 4, 2, 128, 2
	phi3HeadDim                                           = phi3Embd / phi3Heads
)

// writePhi3 writes a fixture to dir and returns its path. The weights are
// N(0, 0.05) from a fixed PCG stream, norms 1: the same bytes every time.
func writePhi3(t *testing.T, dir, name string, sh phi3Shape) string {
	t.Helper()
	f := newFixture(t, "phi3", 3)
	for _, k := range []struct {
		name string
		v    any
	}{
		{"context_length", sh.ctxTrain}, {"embedding_length", phi3Embd}, {"feed_forward_length", phi3FFN},
		{"block_count", phi3Layers}, {"attention.head_count", phi3Heads}, {"attention.head_count_kv", phi3KVHeads},
		{"attention.layer_norm_rms_epsilon", float32(1e-5)}, {"rope.dimension_count", phi3HeadDim},
		{"rope.freq_base", float32(10000)}, {"attention.sliding_window", sh.window},
	} {
		f.key(k.name, k.v)
	}
	if sh.origCtx > 0 {
		f.key("rope.scaling.original_context_length", sh.origCtx)
		f.key("rope.scaling.attn_factor", float32(1.19))
	}
	normal := f.normal(0.05)
	f.tensor("token_embd.weight", f.vocab, phi3Embd, normal)
	f.tensor("output_norm.weight", 1, phi3Embd, ones)
	f.tensor("output.weight", f.vocab, phi3Embd, normal)
	if sh.origCtx > 0 {
		short, long := 1.0, 1.0
		f.tensor("rope_factors_short.weight", 1, phi3HeadDim/2, func() float32 { short *= 1.1; return float32(short) })
		f.tensor("rope_factors_long.weight", 1, phi3HeadDim/2, func() float32 { long *= 1.7; return float32(long) })
	}
	qkv := phi3Embd + 2*phi3KVHeads*phi3HeadDim
	for il := range phi3Layers {
		pre := fmt.Sprintf("blk.%d.", il)
		f.tensor(pre+"attn_norm.weight", 1, phi3Embd, ones)
		f.tensor(pre+"attn_qkv.weight", qkv, phi3Embd, normal)
		f.tensor(pre+"attn_output.weight", phi3Embd, phi3Embd, normal)
		f.tensor(pre+"ffn_norm.weight", 1, phi3Embd, ones)
		f.tensor(pre+"ffn_up.weight", 2*phi3FFN, phi3Embd, normal)
		f.tensor(pre+"ffn_down.weight", phi3Embd, phi3FFN, normal)
	}
	return f.write(dir, name)
}

// Phi-3 (fused attn_qkv, gate and up in ffn_up, LongRoPE's short factors
// with an attention factor) meets llama.cpp's references on the CPU and
// on Vulkan. WEFT_PHI3_FIXTURES=DIR also writes the models there, to make
// the references (testdata/phi3/README.md).
func TestPhi3References(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	dir := t.TempDir()
	if out := os.Getenv("WEFT_PHI3_FIXTURES"); out != "" {
		dir = out
	}
	refs := filepath.Join("..", "testdata", "phi3", "reference")
	for name, sh := range phi3Fixtures {
		path := writePhi3(t, dir, name, sh)
		for _, backend := range []string{"cpu", "vulkan"} {
			t.Run(name+"/"+backend, func(t *testing.T) {
				if backend == "vulkan" {
					skipWithoutVulkanDevice(t)
				}
				// The references' context, 512: which LongRoPE factors
				// llama.cpp read depends on it.
				checkModelOn(t, path, name, refs, Options{Backend: backend, Compile: CompileOptions{Backend: backend, Ctx: 512}})
			})
		}
	}
}

// A plan reads LongRoPE's short or long factors by the context it is
// compiled for, as llama.cpp does by the session's: a session on the other
// side of the original context is refused, naming both ways out.
func TestPhi3LongRoPEContext(t *testing.T) {
	path := writePhi3(t, t.TempDir(), "synth-phi3-longrope", phi3Fixtures["synth-phi3-longrope"])
	long, err := Compile(path, CompileOptions{Ctx: 8192})
	require.NoError(t, err)
	require.True(t, long.Params.LongRoPE)
	short, err := Compile(path, CompileOptions{})
	require.NoError(t, err)
	require.False(t, short.Params.LongRoPE)
	require.Equal(t, 2048, short.Run.Ctx)
	factors := func(p *Plan) (names []string) {
		for _, n := range p.Graph.Nodes {
			if n.Op == "Weight" && strings.HasPrefix(n.Name, "rope_factors") {
				names = append(names, n.Name)
			}
		}
		return names
	}
	require.Equal(t, []string{"rope_factors_long.weight"}, factors(long))
	require.Equal(t, []string{"rope_factors_short.weight"}, factors(short))

	m, err := Open(path, Options{})
	require.NoError(t, err)
	defer m.Close()
	_, err = m.NewSession(SessionOptions{Ctx: 4097})
	require.ErrorContains(t, err, "use --ctx 4096 or less, or recompile with --ctx 4097 for its long factors")
	s, err := m.NewSession(SessionOptions{Ctx: 4096})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	m8, err := Open(path, Options{Compile: CompileOptions{Ctx: 8192}})
	require.NoError(t, err)
	defer m8.Close()
	_, err = m8.NewSession(SessionOptions{Ctx: 1024})
	require.ErrorContains(t, err, "compiled for contexts above 4096")
}
