package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const vocabSeparator = "\n__ggml_vocab_test__\n"

var vocabFamilies = []string{
	"llama-spm", "phi-3", "gpt-2", "deepseek-coder", "deepseek-llm",
	"falcon", "mpt", "refact", "starcoder",
}

// readVocabCases splits the .inp file and pairs it with the .out lines.
func readVocabCases(t *testing.T, base string) (inputs []string, want [][]int32) {
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	inputs = strings.Split(string(inp), vocabSeparator)
	if inputs[len(inputs)-1] == "" {
		inputs = inputs[:len(inputs)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("%s: %d inputs but %d output lines", base, len(inputs), len(lines))
	}
	for _, line := range lines {
		var ids []int32
		for _, f := range strings.Fields(line) {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s: bad id %q", base, f)
			}
			ids = append(ids, int32(v))
		}
		want = append(want, ids)
	}
	return inputs, want
}

func TestConformance(t *testing.T) {
	for _, fam := range vocabFamilies {
		t.Run(fam, func(t *testing.T) {
			rel := filepath.Join("tokenizer", "ggml-vocab-"+fam+".gguf")
			tk := loadTokenizer(t, rel)
			inputs, want := readVocabCases(t, filepath.Join(sharedDir(t), rel))
			for i, in := range inputs {
				got, err := tk.Encode(in, false, false)
				if err != nil {
					t.Fatalf("case %d %q: %v", i, in, err)
				}
				if !slices.Equal(got, want[i]) && !(len(got) == 0 && len(want[i]) == 0) {
					t.Errorf("case %d %q:\n got %v\nwant %v", i, in, got, want[i])
				}
			}
		})
	}
}
