package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// englishText returns about n bytes of English prose: the War and Peace
// prompt from the reference set, repeated.
func englishText(tb testing.TB, n int) string {
	raw, err := os.ReadFile(filepath.Join(sharedDir(tb), "reference", "prompts", "p3-synth-15m.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	for b.Len() < n {
		b.Write(raw)
		b.WriteByte('\n')
	}
	return b.String()[:n]
}

func benchmarkEncode(b *testing.B, rel string) {
	tk := loadTokenizer(b, rel)
	text := englishText(b, 1<<20)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := tk.Encode(text, false, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeSPM(b *testing.B) { benchmarkEncode(b, "tokenizer/ggml-vocab-llama-spm.gguf") }
func BenchmarkEncodeBPE(b *testing.B) { benchmarkEncode(b, "tokenizer/ggml-vocab-gpt-2.gguf") }
func BenchmarkEncodeBPEDeepSeekLLM(b *testing.B) {
	benchmarkEncode(b, "tokenizer/ggml-vocab-deepseek-llm.gguf")
}

func BenchmarkFromGGUF(b *testing.B) {
	path := filepath.Join(sharedDir(b), "tokenizer", "ggml-vocab-gpt-2.gguf")
	for b.Loop() {
		f := openGGUF(b, path)
		if _, err := FromGGUF(f); err != nil {
			b.Fatal(err)
		}
	}
}
