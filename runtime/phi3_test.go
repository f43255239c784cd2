package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// phi3Fixtures are small random-weight Phi-3 models written by
// writePhi3 (stories260K's vocabulary): "synth-phi3" as Phi-3-mini-4k is
// laid out (fused attn_qkv and gate-up ffn_up) with an 8-position sliding
// window, and "synth-phi3-longrope"
// as Phi-3-mini-128k (LongRoPE short and long factors, an attention
// factor, original context 4096). testdata/phi3/README.md says how their
// llama.cpp references were made.
var phi3Fixtures = map[string]phi3Shape{
	"synth-phi3":          {ctxTrain: 4096, window: 8}, // the prompts outgrow the window
	"synth-phi3-longrope": {ctxTrain: 131072, window: 262144, longRoPE: true},
}

type phi3Shape struct {
	ctxTrain, window int
	longRoPE         bool
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
	if sh.longRoPE {
		f.key("rope.scaling.original_context_length", 4096)
		f.key("rope.scaling.attn_factor", float32(1.19))
	}
	normal := f.normal(0.05)
	f.tensor("token_embd.weight", f.vocab, phi3Embd, normal)
	f.tensor("output_norm.weight", 1, phi3Embd, ones)
	f.tensor("output.weight", f.vocab, phi3Embd, normal)
	if sh.longRoPE {
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
				checkModelOn(t, path, name, refs, Options{Backend: backend, Compile: CompileOptions{Backend: backend}})
			})
		}
	}
}

// A context past LongRoPE's original context (where llama.cpp switches
// to the long factors) is refused with the limit and the flag, at compile
// and at session time.
func TestPhi3ContextLimit(t *testing.T) {
	path := writePhi3(t, t.TempDir(), "synth-phi3-longrope", phi3Fixtures["synth-phi3-longrope"])
	_, err := Compile(path, CompileOptions{Ctx: 8192})
	require.ErrorContains(t, err, "context of 8192 tokens: weft runs this phi3 model at up to 4096")
	m, err := Open(path, Options{})
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, 2048, m.Plan.Run.Ctx)
	_, err = m.NewSession(SessionOptions{Ctx: 4097})
	require.ErrorContains(t, err, "use --ctx 4096 or less")
	s, err := m.NewSession(SessionOptions{Ctx: 4096})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}
