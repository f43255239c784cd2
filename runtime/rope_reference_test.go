package runtime

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops"
)

// ropeVariants are stories260K with RoPE's context extensions switched
// on, so that llama.cpp's handling of them can be checked on a trained
// model: Llama 3.1's per-pair frequency factors (rope_freqs.weight), and
// YaRN scaling by 4 from a 128-token training context with an attention
// factor. They are made from testdata/stories260K.gguf by ropeVariant,
// byte for byte the files testdata/rope/README.md's references came from.
var ropeVariants = map[string]func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec){
	"stories260K-ropefreqs": func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		factors := []float32{1, 2.5, 4, 8} // 8 rotated dims: 4 pairs, Llama 3.1's range
		data := make([]byte, 4*len(factors))
		for i, f := range factors {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
		}
		return kv, append(ts, gguf.TensorSpec{Name: "rope_freqs.weight", Dims: []uint64{4}, Type: gguf.TypeF32, Data: data})
	},
	"stories260K-yarn": func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		return append(kv,
			gguf.KV{Key: "llama.rope.scaling.type", Value: gguf.ValueOf("yarn")},
			gguf.KV{Key: "llama.rope.scaling.factor", Value: gguf.ValueOf(float32(4))},
			gguf.KV{Key: "llama.rope.scaling.original_context_length", Value: gguf.ValueOf(uint32(128))},
			gguf.KV{Key: "llama.rope.scaling.attn_factor", Value: gguf.ValueOf(float32(1.25))},
		), ts
	},
}

// ropeVariant writes variant name of stories260K into dir and returns its
// path.
func ropeVariant(t *testing.T, dir, name string) string {
	t.Helper()
	f, err := gguf.Open(filepath.Join("..", "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	defer f.Close()
	var kv []gguf.KV
	kv = append(kv, f.KV...)
	var ts []gguf.TensorSpec
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		ts = append(ts, gguf.TensorSpec{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: f.TensorData(ti)})
	}
	kv, ts = ropeVariants[name](kv, ts)
	path := filepath.Join(dir, name+".gguf")
	require.NoError(t, gguf.WriteFile(path, kv, ts))
	return path
}

// TestRoPEExtensionReferences holds the RoPE variants of stories260K to
// llama.cpp's logits (TestReferenceLogits' rule), and checks that the
// extensions matter: each variant's logits differ from the plain model's
// well beyond that rule's bar, so a backend ignoring them fails.
// WEFT_ROPE_FIXTURES=DIR also writes the variants there, to make the
// references (testdata/rope/README.md).
func TestRoPEExtensionReferences(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	dir := t.TempDir()
	if out := os.Getenv("WEFT_ROPE_FIXTURES"); out != "" {
		dir = out
	}
	plain := evalPrompt(t, filepath.Join("..", "testdata", "stories260K.gguf"), "Hello world, once upon a time")
	for name := range ropeVariants {
		t.Run(name, func(t *testing.T) {
			path := ropeVariant(t, dir, name)
			checkModel(t, path, name, filepath.Join("..", "testdata", "rope", "reference"))
			got := evalPrompt(t, path, "Hello world, once upon a time")
			rel := relDiff(got, plain)
			require.Greater(t, rel, 0.05, "the RoPE extension hardly changes the logits: is it applied?")
		})
	}
}

// TestRoPEExtensionReferencesVulkan is TestRoPEExtensionReferences on the
// Vulkan backend, every node placed there: rope.comp reads the angles
// from a table the host computes with ref.RoPE.CosSin.
func TestRoPEExtensionReferencesVulkan(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	skipWithoutVulkanDevice(t)
	dir := t.TempDir()
	for name := range ropeVariants {
		t.Run(name, func(t *testing.T) {
			path := ropeVariant(t, dir, name)
			o := Options{Backend: "vulkan", Compile: CompileOptions{Backend: "vulkan"}}
			m, err := Open(path, o)
			require.NoError(t, err)
			for _, n := range m.Plan.Graph.Nodes {
				if n.Op == ops.RoPE {
					require.Equal(t, "vulkan", n.Backend, n.Name)
				}
			}
			require.NoError(t, m.Close())
			checkModelOn(t, path, name, filepath.Join("..", "testdata", "rope", "reference"), o)
		})
	}
}

// evalPrompt returns the logits of every token of prompt on the CPU.
func evalPrompt(t *testing.T, path, prompt string) []float32 {
	t.Helper()
	m, err := Open(path, Options{})
	require.NoError(t, err)
	defer m.Close()
	ids, err := m.Tokenizer.Encode(prompt, true, false)
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	out, err := s.Eval(ids, true)
	require.NoError(t, err)
	return out
}
