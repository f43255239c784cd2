package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// randomText draws from a mix chosen to hit every splitter branch:
// letters, digits, ASCII punctuation, contractions, ASCII and non-ASCII
// whitespace, accented and non-Latin letters, marks, symbols and emoji.
func randomText(rng *rand.Rand, n int) string {
	atoms := []string{
		"a", "b", "Z", "q", "the", " ", " ", "  ", "\t", "\n", "\r\n", "0", "7", "123", "'s", "'RE",
		"'ll", "'", ".", ",", "!", "?", "$", "+", "<", "=", "^", "~", "|", "`", "-", "_", "(", "\"",
		"é", "ж", "Ω", "中", "文", "한", "\u0301", "\u00A0", "\u3000", "\u2003", "€", "😀", "١", "½",
		"\u0085", "\x00", "\x1f", "\u200b", "…", "。", "！",
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(atoms[rng.IntN(len(atoms))])
	}
	return b.String()
}

func TestSPMWordCutsMatchWholeTextMerging(t *testing.T) {
	tk := loadTokenizer(t, "tokenizer/ggml-vocab-llama-spm.gguf")
	if !tk.spmWordCuts {
		t.Fatal("expected the Llama SPM vocabulary to allow word cuts")
	}
	whole := *tk
	whole.spmWordCuts = false
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := range 300 {
		text := randomText(rng, 1+rng.IntN(200))
		a, _ := tk.Encode(text, i%2 == 0, false)
		b, _ := whole.Encode(text, i%2 == 0, false)
		if !slices.Equal(a, b) {
			t.Fatalf("text %q:\n cut   %v\n whole %v", text, a, b)
		}
	}
}

// naiveBPE merges a byte-level word by scanning for the best pair each
// round, using string pairs straight from the merges list.
func naiveBPE(word string, ranks map[[2]string]int, vocab map[string]int32) []int32 {
	var syms []string
	for _, r := range word {
		syms = append(syms, string(r))
	}
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] += syms[at+1]
		syms = slices.Delete(syms, at+1, at+2)
	}
	var out []int32
	for _, s := range syms {
		if id, ok := vocab[s]; ok {
			out = append(out, id)
			continue
		}
		for i := 0; i < len(s); i++ {
			if id, ok := vocab[s[i:i+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}

func TestBPEMergesMatchNaiveScan(t *testing.T) {
	rel := "tokenizer/ggml-vocab-gpt-2.gguf"
	tk := loadTokenizer(t, rel)
	f := openGGUF(t, sharedDir(t)+"/"+rel)
	ranks := map[[2]string]int{}
	for i, m := range f.Strings("tokenizer.ggml.merges") {
		if l, r, ok := strings.Cut(m, " "); ok {
			if _, dup := ranks[[2]string{l, r}]; !dup {
				ranks[[2]string{l, r}] = i
			}
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var p preSplitter
	for range 300 {
		text, bounds := p.split(randomText(rng, 1+rng.IntN(120)), tk.bpe.pre.steps)
		for k := 0; k+1 < len(bounds); k++ {
			raw := text[bounds[k]:bounds[k+1]]
			var enc strings.Builder
			for i := 0; i < len(raw); i++ {
				enc.WriteRune(byteLevel[raw[i]])
			}
			want := naiveBPE(enc.String(), ranks, tk.byText)
			s := bpeSession{m: tk.bpe}
			if got := s.encodeWord(raw, nil); !slices.Equal(got, want) {
				t.Fatalf("word %q: got %v, naive %v", raw, got, want)
			}
		}
	}
}

// TestRoundTrip checks that decoding recovers the text: byte-level BPE is
// lossless, and SPM is lossless apart from the added leading space.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for _, fam := range []string{"gpt-2", "llama-spm", "falcon", "deepseek-llm", "starcoder"} {
		tk := loadTokenizer(t, "tokenizer/ggml-vocab-"+fam+".gguf")
		for range 100 {
			text := randomText(rng, 1+rng.IntN(300))
			ids, err := tk.Encode(text, false, false)
			if err != nil {
				t.Fatal(err)
			}
			want := text
			if tk.Kind() == SPM {
				want = " " + text
			}
			if got := tk.Decode(ids); got != want {
				t.Fatalf("%s: decode(encode(%q)) = %q", fam, text, got)
			}
		}
	}
}
