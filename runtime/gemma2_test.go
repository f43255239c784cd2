package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Gemma 2 fixture: 26 layers (llama.cpp's build_gemma2 knows 26, 42 and
// 46), 64 wide, 4 heads of 16 over 2 KV heads, FFN 128, an 8-position
// sliding window on the even layers, and soft-capping tight enough to
// change the result: scores at 0.5, logits at 2.
const (
	gemma2Embd, gemma2Heads, gemma2KVHeads, gemma2HeadDim, gemma2FFN, gemma2Layers = 64, 4, 2, 16, 128, 26
)

// writeGemma2 writes the fixture with the given soft-capping values.
func writeGemma2(t *testing.T, dir, name string, attnCap, finalCap float32) string {
	t.Helper()
	f := newFixture(t, "gemma2", 7)
	for _, k := range []struct {
		name string
		v    any
	}{
		{"context_length", 8192}, {"embedding_length", gemma2Embd}, {"feed_forward_length", gemma2FFN},
		{"block_count", gemma2Layers}, {"attention.head_count", gemma2Heads}, {"attention.head_count_kv", gemma2KVHeads},
		{"attention.key_length", gemma2HeadDim}, {"attention.value_length", gemma2HeadDim},
		{"attention.layer_norm_rms_epsilon", float32(1e-6)}, {"attention.sliding_window", 8},
		{"attn_logit_softcapping", attnCap}, {"final_logit_softcapping", finalCap},
	} {
		f.key(k.name, k.v)
	}
	normal, wide := f.normal(0.05), f.normal(0.4)
	f.tensor("token_embd.weight", f.vocab, gemma2Embd, normal)
	f.tensor("output_norm.weight", 1, gemma2Embd, ones)
	q := gemma2Heads * gemma2HeadDim
	kv := gemma2KVHeads * gemma2HeadDim
	for il := range gemma2Layers {
		pre := fmt.Sprintf("blk.%d.", il)
		f.tensor(pre+"attn_norm.weight", 1, gemma2Embd, ones)
		f.tensor(pre+"attn_q.weight", q, gemma2Embd, wide) // large scores, so the cap bites
		f.tensor(pre+"attn_k.weight", kv, gemma2Embd, wide)
		f.tensor(pre+"attn_v.weight", kv, gemma2Embd, normal)
		f.tensor(pre+"attn_output.weight", gemma2Embd, q, normal)
		f.tensor(pre+"post_attention_norm.weight", 1, gemma2Embd, ones)
		f.tensor(pre+"ffn_norm.weight", 1, gemma2Embd, ones)
		f.tensor(pre+"ffn_gate.weight", gemma2FFN, gemma2Embd, normal)
		f.tensor(pre+"ffn_up.weight", gemma2FFN, gemma2Embd, normal)
		f.tensor(pre+"ffn_down.weight", gemma2Embd, gemma2FFN, normal)
		f.tensor(pre+"post_ffw_norm.weight", 1, gemma2Embd, ones)
	}
	return f.write(dir, name)
}

// Gemma 2 (post-norms, sliding window on the even layers, soft-capped
// scores and logits) meets llama.cpp's references on the CPU and on
// Vulkan, and the soft-capping matters: without it the logits move far
// beyond the bar. WEFT_GEMMA2_FIXTURES=DIR also writes the model there
// (testdata/gemma2/README.md).
func TestGemma2References(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	dir := t.TempDir()
	if out := os.Getenv("WEFT_GEMMA2_FIXTURES"); out != "" {
		dir = out
	}
	path := writeGemma2(t, dir, "synth-gemma2", 0.5, 2)
	refs := filepath.Join("..", "testdata", "gemma2", "reference")
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "vulkan" {
				skipWithoutVulkanDevice(t)
			}
			checkModelOn(t, path, "synth-gemma2", refs, Options{Backend: backend, Compile: CompileOptions{Backend: backend}})
		})
	}
	uncapped := writeGemma2(t, t.TempDir(), "synth-gemma2-uncapped", 1e9, 1e9)
	prompt := "Hello world, once upon a time"
	require.Greater(t, relDiff(evalPrompt(t, path, prompt), evalPrompt(t, uncapped, prompt)), 0.05, "the soft-capping hardly changes the logits")
}
