package tokenizer

import (
	"slices"
	"strings"
)

// Texts by which llama.cpp recognises special tokens that the metadata does
// not name. A token found this way is forced to be a control token.
var (
	eotTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "<｜end▁of▁sentence｜>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>", "<PRE>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>", "<SUF>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>", "<MID>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<PAD>"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>"}
)

// detectEOG fills unset EOT/EOM/FIM ids from token texts (lowest id first,
// where llama.cpp takes whichever its hash map yields first) and builds the
// end-of-generation set.
func (t *Tokenizer) detectEOG() {
	slots := []struct {
		id    *int32
		texts []string
	}{
		{&t.eot, eotTexts}, {&t.eom, eomTexts}, {&t.fim.pre, fimPreTexts}, {&t.fim.suf, fimSufTexts},
		{&t.fim.mid, fimMidTexts}, {&t.fim.pad, fimPadTexts}, {&t.fim.rep, fimRepTexts}, {&t.fim.sep, fimSepTexts},
	}
	t.eog = map[int32]bool{}
	for i := range t.tokens {
		id := int32(i)
		text := t.tokens[i].text
		if t.byText[text] != id {
			continue // shadowed by a later token with the same text
		}
		for _, s := range slots {
			if *s.id == noToken && slices.Contains(s.texts, text) {
				*s.id = id
				t.forceControl(id)
			}
		}
	}
	for _, id := range []int32{t.fim.pad, t.fim.rep, t.fim.sep} {
		if id != noToken {
			t.eog[id] = true
		}
	}
	for _, text := range eogTexts {
		if id, ok := t.byText[text]; ok {
			t.eog[id] = true
			t.forceControl(id)
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != noToken {
			t.eog[id] = true
		}
	}
}

func (t *Tokenizer) forceControl(id int32) {
	if t.tokens[id].attr&attrControl == 0 {
		t.tokens[id].attr = attrControl
	}
}

// buildSpecialCache lists the tokens matched in raw text, longest first;
// equal lengths keep id order (llama.cpp's unstable sort leaves it open).
func (t *Tokenizer) buildSpecialCache() {
	t.specials = t.specials[:0]
	for i, tok := range t.tokens {
		if tok.attr&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.specials = append(t.specials, int32(i))
		}
	}
	slices.SortStableFunc(t.specials, func(a, b int32) int {
		return len(t.tokens[b].text) - len(t.tokens[a].text)
	})
}

// applyModelAttrs sets the strip attributes llama.cpp derives from the model
// and pre-tokenizer names (the GGUF has no per-token attribute key).
func (t *Tokenizer) applyModelAttrs(modelName, preName string) {
	name := asciiLower(modelName)
	set := func(text string, a attr, on bool) {
		if id, ok := t.byText[text]; ok {
			if on {
				t.tokens[id].attr |= a
			} else {
				t.tokens[id].attr &^= a
			}
		}
	}
	switch {
	case containsAny(preName, "jina-v2-de", "jina-v2-es", "jina-v2-code"):
		set("<mask>", attrLStrip, true)
	case containsAny(name, "phi-3", "phi3"):
		for _, id := range t.specials {
			t.tokens[id].attr |= attrRStrip
		}
		set("</s>", attrRStrip, true)
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			set(s, attrRStrip, false)
		}
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// fragment is either a run of raw text [start, end) or one special token.
type fragment struct {
	id         int32 // noToken for raw text
	start, end int
}

// partition cuts text at occurrences of special tokens, one token at a time
// in cache order. Without parseSpecial only user-defined tokens are cut.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{id: noToken, start: 0, end: len(text)}}
	var next []fragment
	for _, id := range t.specials {
		tok := &t.tokens[id]
		if !parseSpecial && tok.attr&(attrControl|attrUnknown) != 0 {
			continue
		}
		if !anyContains(text, frags, tok.text) {
			continue
		}
		next = next[:0]
		for _, fr := range frags {
			next = t.cutFragment(text, fr, id, next)
		}
		frags, next = next, frags
	}
	return frags
}

func anyContains(text string, frags []fragment, pat string) bool {
	for _, fr := range frags {
		if fr.id == noToken && strings.Contains(text[fr.start:fr.end], pat) {
			return true
		}
	}
	return false
}

// cutFragment splits one raw fragment at every occurrence of token id,
// honouring the token's left/right whitespace stripping.
func (t *Tokenizer) cutFragment(text string, fr fragment, id int32, out []fragment) []fragment {
	if fr.id != noToken {
		return append(out, fr)
	}
	tok := &t.tokens[id]
	base, end := fr.start, fr.end
	for base < end {
		i := strings.Index(text[base:end], tok.text)
		if i < 0 {
			return append(out, fragment{id: noToken, start: base, end: end})
		}
		m := base + i
		left := m
		if tok.attr&attrLStrip != 0 {
			for left > base && isCSpace(text[left-1]) {
				left--
			}
		}
		if left > base {
			out = append(out, fragment{id: noToken, start: base, end: left})
		}
		out = append(out, fragment{id: id})
		base = m + len(tok.text)
		if tok.attr&attrRStrip != 0 {
			for base < end && isCSpace(text[base]) {
				base++
			}
		}
	}
	return out
}

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }
