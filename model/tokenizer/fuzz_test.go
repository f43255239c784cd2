package tokenizer

import "testing"

// FuzzEncode checks that no input panics and that byte-level BPE decodes
// back to llama.cpp's reading of the input.
func FuzzEncode(f *testing.F) {
	bpe := loadTokenizer(f, "tokenizer/ggml-vocab-gpt-2.gguf")
	spm := loadTokenizer(f, "tokenizer/ggml-vocab-llama-spm.gguf")
	for _, s := range []string{"", " ", "Hello, y'all!", "\xff\xfe", "  \n\t 3333 ", "<s>x</s>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := bpe.Encode(s, true, true); err != nil {
			t.Fatal(err)
		}
		if _, err := spm.Encode(s, true, true); err != nil {
			t.Fatal(err)
		}
		if plain, _ := bpe.Encode(s, false, false); bpe.Decode(plain) != llamaLenient(s) {
			t.Fatalf("BPE round trip of %q gave %q", s, bpe.Decode(plain))
		}
	})
}
