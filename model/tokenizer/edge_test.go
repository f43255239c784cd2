package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEmptyInput(t *testing.T) {
	spm := loadTokenizer(t, "tokenizer/ggml-vocab-llama-spm.gguf")
	if ids, _ := spm.Encode("", false, false); len(ids) != 0 {
		t.Errorf("SPM empty, no specials: %v", ids)
	}
	if ids, _ := spm.Encode("", true, false); !slices.Equal(ids, []int32{spm.BOS()}) {
		t.Errorf("SPM empty with specials: %v, want [BOS]", ids)
	}
	bpe := loadTokenizer(t, "tokenizer/ggml-vocab-gpt-2.gguf")
	if bpe.AddBOS() {
		t.Error("gpt-2 should not add BOS")
	}
	if ids, _ := bpe.Encode("", true, true); len(ids) != 0 {
		t.Errorf("BPE empty: %v", ids)
	}
}

func TestOnlyWhitespace(t *testing.T) {
	bpe := loadTokenizer(t, "tokenizer/ggml-vocab-gpt-2.gguf")
	spm := loadTokenizer(t, "tokenizer/ggml-vocab-llama-spm.gguf")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	spaces := []string{" ", "\t", "\n", "\r", "\u00A0", "\u3000"}
	for range 50 {
		var b strings.Builder
		for range 1 + rng.IntN(20) {
			b.WriteString(spaces[rng.IntN(len(spaces))])
		}
		text := b.String()
		for _, tk := range []*Tokenizer{bpe, spm} {
			ids, _ := tk.Encode(text, false, false)
			if len(ids) == 0 {
				t.Fatalf("%v: no tokens for %q", tk.Kind(), text)
			}
			want := text
			if tk.Kind() == SPM {
				want = " " + text
			}
			if got := tk.Decode(ids); got != want {
				t.Fatalf("%v: %q decodes to %q", tk.Kind(), text, got)
			}
		}
	}
}

func TestLongInput(t *testing.T) {
	text := englishText(t, 1<<20)
	for _, fam := range []string{"llama-spm", "gpt-2"} {
		tk := loadTokenizer(t, "tokenizer/ggml-vocab-"+fam+".gguf")
		start := time.Now()
		ids, err := tk.Encode(text, false, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: 1 MiB -> %d tokens in %v", fam, len(ids), time.Since(start))
		want := text
		if tk.Kind() == SPM {
			want = " " + text
		}
		if tk.Decode(ids) != want {
			t.Fatalf("%s: 1 MiB text does not round-trip", fam)
		}
	}
}

// TestInvalidUTF8 pins the documented behaviour: SPM keeps every byte as a
// byte token, BPE reads each bad byte as U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	spm := loadTokenizer(t, "tokenizer/ggml-vocab-llama-spm.gguf")
	bpe := loadTokenizer(t, "tokenizer/ggml-vocab-gpt-2.gguf")
	for _, text := range []string{"\xff", "a\xffb", "\xe2\x82", "ok \xc3(", "\xed\xa0\x80x", "\xf4\x90\x80\x80"} {
		ids, err := spm.Encode(text, false, false)
		if err != nil || spm.Decode(ids) != " "+text {
			t.Errorf("SPM %q: ids %v decode %q err %v", text, ids, spm.Decode(ids), err)
		}
		ids, err = bpe.Encode(text, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := bpe.Decode(ids), llamaLenient(text); got != want {
			t.Errorf("BPE %q: decode %q, want %q", text, got, want)
		}
	}
}

// llamaLenient re-encodes text as llama.cpp's decoder reads it, written
// independently of decodeCP: a byte is replaced by U+FFFD unless it starts
// a sequence with enough continuation bytes; overlong forms are read for
// their value and surrogates are kept.
func llamaLenient(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			b, i = append(b, c), i+1
			continue
		}
		n := map[byte]int{0xC: 2, 0xD: 2, 0xE: 3, 0xF: 4}[c>>4]
		if c >= 0xF8 || n == 0 || i+n > len(s) {
			b, i = append(b, "\uFFFD"...), i+1
			continue
		}
		ok := true
		for k := 1; k < n; k++ {
			ok = ok && s[i+k]&0xC0 == 0x80
		}
		v := rune(c) & (0x7F >> n)
		for k := 1; k < n; k++ {
			v = v<<6 | rune(s[i+k]&0x3F)
		}
		if !ok || v > 0x10FFFF {
			b, i = append(b, "\uFFFD"...), i+1
			continue
		}
		if v >= 0xD800 && v <= 0xDFFF {
			b = append(b, 0xED, byte(0x80|v>>6&0x3F), byte(0x80|v&0x3F))
		} else {
			b = utf8.AppendRune(b, v)
		}
		i += n
	}
	return string(b)
}

func TestUnknownCharacters(t *testing.T) {
	spm := loadTokenizer(t, "tokenizer/ggml-vocab-llama-spm.gguf")
	text := "\U0001D518\U000E0001" // not in the vocabulary as characters
	ids, _ := spm.Encode(text, false, false)
	byteTokens := 0
	for _, id := range ids {
		if spm.tokens[id].attr&attrByte != 0 {
			byteTokens++
		}
	}
	if byteTokens != len(text) {
		t.Errorf("SPM: %d byte tokens for %d unknown bytes (ids %v)", byteTokens, len(text), ids)
	}
	if spm.Decode(ids) != " "+text {
		t.Errorf("SPM unknown characters do not round-trip: %q", spm.Decode(ids))
	}
	bpe := loadTokenizer(t, "tokenizer/ggml-vocab-gpt-2.gguf")
	ids, _ = bpe.Encode(text, false, false)
	if bpe.Decode(ids) != text {
		t.Errorf("BPE unknown characters do not round-trip: %q", bpe.Decode(ids))
	}
}

func TestParseSpecial(t *testing.T) {
	spm := loadTokenizer(t, "tokenizer/ggml-vocab-llama-spm.gguf")
	plain, _ := spm.Encode("<s>hi</s>", false, false)
	if slices.Contains(plain, spm.BOS()) || slices.Contains(plain, spm.EOS()) {
		t.Errorf("parseSpecial=false produced control tokens: %v", plain)
	}
	parsed, _ := spm.Encode("<s>hi</s>", false, true)
	hi, _ := spm.Encode("hi", false, false)
	want := append(append([]int32{spm.BOS()}, hi...), spm.EOS())
	if !slices.Equal(parsed, want) {
		t.Errorf("parseSpecial=true: %v, want %v", parsed, want)
	}
	if !spm.IsEOG(spm.EOS()) || spm.IsEOG(spm.BOS()) {
		t.Error("EOG set wrong for llama-spm")
	}
	if len(spm.Piece(spm.BOS())) != 0 || string(spm.PieceSpecial(spm.BOS())) != "<s>" {
		t.Errorf("BOS pieces: %q / %q", spm.Piece(spm.BOS()), spm.PieceSpecial(spm.BOS()))
	}
}

func TestStreamDecoder(t *testing.T) {
	tk := loadTokenizer(t, "tokenizer/ggml-vocab-gpt-2.gguf")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 6))
	for range 100 {
		text := randomText(rng, 1+rng.IntN(200))
		ids, _ := tk.Encode(text, false, false)
		d := tk.NewStreamDecoder()
		var b strings.Builder
		for _, id := range ids {
			part := d.Add(id)
			if !utf8.ValidString(part) {
				t.Fatalf("Add emitted invalid UTF-8 %q", part)
			}
			b.WriteString(part)
		}
		b.WriteString(d.Flush())
		if b.String() != text {
			t.Fatalf("stream %q != %q", b.String(), text)
		}
	}
	d := tk.NewStreamDecoder()
	euro, _ := tk.Encode("\U0001D518", false, false) // a rare 4-byte character
	if len(euro) < 2 {
		t.Fatalf("want the character split over tokens, got %v", euro)
	}
	if got := d.Add(euro[0]); got != "" {
		t.Errorf("first part of the character emitted %q", got)
	}
	if got, want := d.Flush(), strings.Repeat("\uFFFD", len(tk.Piece(euro[0]))); got != want {
		t.Errorf("flush of unfinished character = %q", got)
	}
}

func TestOutOfRangeIDs(t *testing.T) {
	tk := loadTokenizer(t, "tokenizer/ggml-vocab-gpt-2.gguf")
	for _, id := range []int32{-1, int32(tk.VocabSize()), 1 << 30} {
		if tk.Piece(id) != nil || tk.PieceSpecial(id) != nil || tk.IsEOG(id) {
			t.Errorf("id %d should render empty and not end generation", id)
		}
	}
}
