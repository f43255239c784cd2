package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Dimensions of the Qwen 3 fixture: 4 heads of 32 over 2 KV heads in a
// 64-wide model (the head dimension is explicit and wider than
// n_embd/n_head, as on Qwen3-0.6B), FFN 128, 2 layers.
const (
	qwen3Embd, qwen3Heads, qwen3KVHeads, qwen3HeadDim, qwen3FFN, qwen3Layers = 64, 4, 2, 32, 128, 2
)

// writeQwen3 writes "synth-qwen3", a random-weight Qwen 3 (per-head q and
// k RMSNorm before NeoX RoPE, no biases, tied output) with stories260K's
// vocabulary, to dir. The weights are N(0, 0.05) from a fixed PCG stream;
// the q and k norm weights are 1 ± 0.25 so that they matter: the same
// bytes every time.
func writeQwen3(t *testing.T, dir string) string {
	t.Helper()
	f := newFixture(t, "qwen3", 5)
	for _, k := range []struct {
		name string
		v    any
	}{
		{"context_length", 4096}, {"embedding_length", qwen3Embd}, {"feed_forward_length", qwen3FFN},
		{"block_count", qwen3Layers}, {"attention.head_count", qwen3Heads}, {"attention.head_count_kv", qwen3KVHeads},
		{"attention.key_length", qwen3HeadDim}, {"attention.value_length", qwen3HeadDim},
		{"attention.layer_norm_rms_epsilon", float32(1e-6)}, {"rope.dimension_count", qwen3HeadDim},
		{"rope.freq_base", float32(1e6)},
	} {
		f.key(k.name, k.v)
	}
	normal := f.normal(0.05)
	around1 := f.normal(0.25)
	headNorm := func() float32 { return 1 + around1() }
	f.tensor("token_embd.weight", f.vocab, qwen3Embd, normal)
	f.tensor("output_norm.weight", 1, qwen3Embd, ones)
	q, kv := qwen3Heads*qwen3HeadDim, qwen3KVHeads*qwen3HeadDim
	for il := range qwen3Layers {
		pre := fmt.Sprintf("blk.%d.", il)
		f.tensor(pre+"attn_norm.weight", 1, qwen3Embd, ones)
		f.tensor(pre+"attn_q.weight", q, qwen3Embd, normal)
		f.tensor(pre+"attn_k.weight", kv, qwen3Embd, normal)
		f.tensor(pre+"attn_v.weight", kv, qwen3Embd, normal)
		f.tensor(pre+"attn_q_norm.weight", 1, qwen3HeadDim, headNorm)
		f.tensor(pre+"attn_k_norm.weight", 1, qwen3HeadDim, headNorm)
		f.tensor(pre+"attn_output.weight", qwen3Embd, q, normal)
		f.tensor(pre+"ffn_norm.weight", 1, qwen3Embd, ones)
		f.tensor(pre+"ffn_gate.weight", qwen3FFN, qwen3Embd, normal)
		f.tensor(pre+"ffn_up.weight", qwen3FFN, qwen3Embd, normal)
		f.tensor(pre+"ffn_down.weight", qwen3Embd, qwen3FFN, normal)
	}
	return f.write(dir, "synth-qwen3")
}

// Qwen 3 (per-head q and k norms, explicit head dimension, tied output)
// meets llama.cpp's references on the CPU and on Vulkan.
// WEFT_QWEN3_FIXTURES=DIR also writes the model there, to make the
// references (testdata/qwen3/README.md).
func TestQwen3References(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	dir := t.TempDir()
	if out := os.Getenv("WEFT_QWEN3_FIXTURES"); out != "" {
		dir = out
	}
	path := writeQwen3(t, dir)
	refs := filepath.Join("..", "testdata", "qwen3", "reference")
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "vulkan" {
				skipWithoutVulkanDevice(t)
			}
			checkModelOn(t, path, "synth-qwen3", refs, Options{Backend: backend, Compile: CompileOptions{Backend: backend}})
		})
	}
}
