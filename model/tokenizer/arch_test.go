package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestArchFixtureVocabs tokenizes llama.cpp's tokenizer test strings (the
// same 46 for every BPE family) with the BPE fixtures of
// ../shared/models-arch and compares with the HF tokenizers' ids: for
// phi2 (GPT-2's vocabulary under the pre-tokenizer name "phi-2") those of
// ggml-vocab-gpt-2.gguf.out in ../shared/tokenizer; for qwen2 and llama3
// those of llama.cpp's ggml-vocab-qwen2.gguf.out and
// ggml-vocab-llama-bpe.gguf.out (c392e5094), kept in testdata/vocab.
func TestArchFixtureVocabs(t *testing.T) {
	inputs, gpt2 := readVocabCases(t, filepath.Join(sharedDir(t), "tokenizer", "ggml-vocab-gpt-2.gguf"))
	for _, c := range []struct {
		model string
		want  [][]int32
	}{
		{"synth-phi2-f32", gpt2},
		{"synth-qwen2-f32", readIDs(t, filepath.Join("testdata", "vocab", "qwen2.out"), len(inputs))},
		{"synth-llama3-f32", readIDs(t, filepath.Join("testdata", "vocab", "llama-bpe.out"), len(inputs))},
	} {
		t.Run(c.model, func(t *testing.T) {
			tk := loadTokenizer(t, filepath.Join("models-arch", c.model+".gguf"))
			for i, in := range inputs {
				got, err := tk.Encode(in, false, false)
				require.NoError(t, err, "case %d %q", i, in)
				assert.True(t, slices.Equal(got, c.want[i]) || len(got)+len(c.want[i]) == 0, "case %d %q:\n got %v\nwant %v", i, in, got, c.want[i])
			}
		})
	}
}

// readIDs reads one line of token ids per test string.
func readIDs(t *testing.T, path string, n int) [][]int32 {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, n, path)
	out := make([][]int32, n)
	for i, line := range lines {
		for _, f := range strings.Fields(line) {
			v, err := strconv.ParseInt(f, 10, 32)
			require.NoError(t, err, "%s line %d", path, i+1)
			out[i] = append(out[i], int32(v))
		}
	}
	return out
}
