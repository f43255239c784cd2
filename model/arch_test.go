package model

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
)

// archModel opens ../shared/models-arch/name.gguf (skipping without it).
func archModel(t *testing.T, name string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testenv.Shared(t, "models-arch"), name+".gguf"))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestArchitectures(t *testing.T) {
	assert.Equal(t, []string{"gemma", "gemma2", "llama", "phi2", "phi3", "qwen2", "qwen3"}, Architectures())
	assert.True(t, Supported("qwen2"))
	assert.False(t, Supported("mamba"))
	assert.Error(t, Register(Arch{Name: "llama", Tensors: func(Params) []Tensor { return nil }, Lower: func(*Lowering) error { return nil }}), "a second llama")
	assert.Error(t, Register(Arch{Name: "incomplete"}))
}

// opCounts counts a graph's nodes by op.
func opCounts(l *Lowered) map[string]int {
	counts := map[string]int{}
	for _, n := range l.Graph.Nodes {
		counts[n.Op]++
	}
	return counts
}

// TestLowerArchFixtures checks each architecture's parameters and the
// ops that set it apart (biases, scales, norms, activations).
func TestLowerArchFixtures(t *testing.T) {
	cases := []struct {
		name   string
		params Params
		ops    map[string]int
	}{
		{"synth-qwen2-f32", Params{Arch: "qwen2", VocabSize: 151936, Embd: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 352, CtxTrain: 4096, NormEps: 1e-6, RopeBase: 1e6, RopeFreqScale: 1, RopeDims: 8},
			// 3 biases per layer; 7 matmuls per layer and the output.
			map[string]int{"Add": 2*3 + 2*2, "MatMul": 2*7 + 1, "RMSNorm": 5, "SiLU": 2, "Scale": 0}},
		{"synth-phi2-f32", Params{Arch: "phi2", VocabSize: 50257, Embd: 128, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 32, FFN: 512, CtxTrain: 2048, NormEps: 1e-5, RopeBase: 10000, RopeFreqScale: 1, RopeDims: 16},
			// Per layer: norm bias, 6 projection biases, attn+mlp, +x; output norm bias and output bias.
			map[string]int{"Add": 2*(1+6+2) + 2, "MatMul": 2*6 + 1, "LayerNorm": 3, "GELU": 2, "Scale": 2}},
		{"synth-gemma-f32", Params{Arch: "gemma", VocabSize: 32000, Embd: 128, Layers: 2, Heads: 4, KVHeads: 1, HeadDim: 32, FFN: 256, CtxTrain: 8192, NormEps: 1e-6, RopeBase: 10000, RopeFreqScale: 1, RopeDims: 32},
			// The embedding scale and q's scale per layer.
			map[string]int{"Add": 2 * 2, "MatMul": 2*7 + 1, "RMSNorm": 5, "GELU": 2, "Scale": 1 + 2}},
		{"synth-llama3-f32", Params{Arch: "llama", VocabSize: 128256, Embd: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 384, CtxTrain: 8192, NormEps: 1e-5, RopeBase: 5e5, RopeFreqScale: 1, RopeDims: 8},
			map[string]int{"Add": 2 * 2, "MatMul": 2*7 + 1, "RMSNorm": 5, "SiLU": 2, "Scale": 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := Lower(archModel(t, c.name))
			require.NoError(t, err)
			assert.Equal(t, c.params, l.Params)
			counts := opCounts(l)
			for op, n := range c.ops {
				assert.Equal(t, n, counts[op], "%s nodes", op)
			}
			logits := l.Graph.Nodes[l.Graph.Outputs["logits"]]
			assert.Equal(t, graphType(c.params.VocabSize), logits.Type.String())
		})
	}
}

func graphType(vocab int) string { return "F32[R," + strconv.Itoa(vocab) + "]" }

// TestRopeAndAttentionStyles checks the attributes that distinguish the
// architectures' attention: NeoX RoPE and where 1/√head_dim is applied.
func TestRopeAndAttentionStyles(t *testing.T) {
	for name, want := range map[string]struct {
		neox  bool
		scale float64 // Attention's score scale
	}{
		"synth-qwen2-f32":  {true, float64(float32(1 / 2.8284271247461903))},
		"synth-phi2-f32":   {true, 1},
		"synth-gemma-f32":  {true, 1},
		"synth-llama3-f32": {false, float64(float32(1 / 2.8284271247461903))},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := Lower(archModel(t, name))
			require.NoError(t, err)
			for _, n := range l.Graph.Nodes {
				switch n.Op {
				case "RoPE":
					assert.Equal(t, want.neox, n.Attrs.Bool("neox"), n.Name)
				case "Attention":
					assert.Equal(t, want.scale, n.Attrs["scale"], n.Name)
				}
			}
		})
	}
}

// edit returns f re-encoded with fn applied to its metadata and tensors.
func edit(t *testing.T, f *gguf.File, fn func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec)) *gguf.File {
	return rewrite(t, f, fn)
}

func dropTensor(name string) func([]gguf.KV, []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
	return func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		for i := range ts {
			if ts[i].Name == name {
				return kv, append(ts[:i:i], ts[i+1:]...)
			}
		}
		return kv, ts
	}
}

func setKey(key string, v gguf.Value) func([]gguf.KV, []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
	return func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		for i := range kv {
			if kv[i].Key == key {
				kv[i].Value = v
				return kv, ts
			}
		}
		return append(kv, gguf.KV{Key: key, Value: v}), ts
	}
}

// TestArchErrorsNameTheProblem: every refusal names the tensor or key.
func TestArchErrorsNameTheProblem(t *testing.T) {
	qwen := archModel(t, "synth-qwen2-f32")
	phi := archModel(t, "synth-phi2-f32")
	cases := []struct {
		name string
		f    *gguf.File
		want string
	}{
		{"required bias missing", edit(t, qwen, dropTensor("blk.1.attn_k.bias")), `lowering qwen2: missing tensor "blk.1.attn_k.bias"`},
		{"norm bias missing", edit(t, phi, dropTensor("blk.0.attn_norm.bias")), `missing tensor "blk.0.attn_norm.bias"`},
		{"untied output missing", edit(t, phi, dropTensor("output.weight")), `missing tensor "output.weight"`},
		{"misshapen bias", edit(t, qwen, func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
			for i := range ts {
				if ts[i].Name == "blk.0.attn_q.bias" {
					ts[i].Dims, ts[i].Data = []uint64{16}, ts[i].Data[:64]
				}
			}
			return kv, ts
		}), `tensor "blk.0.attn_q.bias" has GGUF dims [16], want [32]`},
		{"fused qkv", edit(t, phi, func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
			for i := range ts {
				if ts[i].Name == "blk.0.attn_q.weight" {
					ts[i].Name = "blk.0.attn_qkv.weight"
				}
			}
			return kv, ts
		}), `tensor "blk.0.attn_qkv.weight" has GGUF dims [128 128], want [128 384]`},
		{"key of the wrong type", edit(t, qwen, setKey("qwen2.embedding_length", gguf.ValueOf("wide"))), `hyperparameter qwen2.embedding_length is wide (string), want a non-negative integer`},
		{"required key missing", edit(t, qwen, func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
			for i := range kv {
				if kv[i].Key == "qwen2.block_count" {
					return append(kv[:i:i], kv[i+1:]...), ts
				}
			}
			return kv, ts
		}), `missing hyperparameter qwen2.block_count`},
		{"partial rotation in qwen2", edit(t, qwen, setKey("qwen2.rope.dimension_count", gguf.ValueOf(uint32(4)))), `rope.dimension_count 4 differs from the head dimension 8`},
		{"longrope", edit(t, qwen, setKey("qwen2.rope.scaling.type", gguf.ValueOf("longrope"))), `qwen2.rope.scaling.type "longrope" is not supported (linear, yarn and none are)`},
		{"llama 3.1 rope factors", edit(t, archModel(t, "synth-llama3-f32"), func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
			return kv, append(ts, gguf.TensorSpec{Name: "rope_freqs.weight", Dims: []uint64{3}, Type: gguf.TypeF32, Data: make([]byte, 12)})
		}), `tensor "rope_freqs.weight" has GGUF dims [3], want [4]`},
		{"value length", edit(t, qwen, setKey("qwen2.attention.value_length", gguf.ValueOf(uint32(16)))), `attention.value_length 16 differs from key_length 8`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Lower(c.f)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestAllTensorProblemsListed: one error lists every problem it found.
func TestAllTensorProblemsListed(t *testing.T) {
	f := archModel(t, "synth-qwen2-f32")
	f = edit(t, f, dropTensor("blk.0.ffn_up.weight"))
	f = edit(t, f, dropTensor("blk.1.attn_v.bias"))
	_, err := Lower(f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `missing tensor "blk.0.ffn_up.weight"; missing tensor "blk.1.attn_v.bias"`)
}

// TestOptionalBiasesAreUsed: llama takes the projection biases llama.cpp
// allows when a file has them.
func TestOptionalBiasesAreUsed(t *testing.T) {
	f := edit(t, stories(t), func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		return kv, append(ts, gguf.TensorSpec{Name: "blk.0.attn_q.bias", Dims: []uint64{64}, Type: gguf.TypeF32, Data: make([]byte, 256)})
	})
	l, err := Lower(f)
	require.NoError(t, err)
	var bias *int
	for _, n := range l.Graph.Nodes {
		if n.Name == "blk.0.q_b" {
			id := n.ID
			bias = &id
			assert.Equal(t, "Add", n.Op)
			assert.Equal(t, "blk.0.attn_q.bias", l.Graph.Nodes[n.Inputs[1]].Tensor)
		}
	}
	assert.NotNil(t, bias, "no bias add for blk.0.attn_q.bias")
}
