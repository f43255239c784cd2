package tokenizer

import (
	"fmt"
	"strconv"

	"github.com/weft-ml/weft/gguf"
)

// FromGGUF builds the tokenizer described by f's tokenizer.ggml.* keys,
// with llama.cpp's defaults for every key that is absent.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	model, ok := f.Lookup("tokenizer.ggml.model")
	name, isStr := model.V.(string)
	if !ok || !isStr {
		return nil, fmt.Errorf("tokenizer: missing tokenizer.ggml.model")
	}
	t := &Tokenizer{eot: noToken, eom: noToken, sep: noToken, pad: noToken}
	var pre *preConfig
	switch name {
	case "llama":
		t.kind = SPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addBOS, t.addSpacePrefix = true, true
	case "gpt2":
		t.kind = BPE
		t.bos, t.eos, t.unk = 11, 11, noToken
		t.pre = f.String("tokenizer.ggml.pre", "default")
		var err error
		if pre, err = lookupPre(t.pre); err != nil {
			return nil, err
		}
		t.addBOS = pre.addBOS
		if pre.noBOS {
			t.bos = noToken
		}
	default:
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer.ggml.model %q (want llama or gpt2)", name)
	}
	t.addSpacePrefix = f.Bool("tokenizer.ggml.add_space_prefix", t.addSpacePrefix)
	if err := t.loadTokens(f); err != nil {
		return nil, err
	}
	if t.kind == SPM {
		t.initSPMBytes()
		t.spmWordCuts = wordBoundaries(t.tokens)
	} else {
		m, err := newBPEModel(t, f.Strings("tokenizer.ggml.merges"), pre)
		if err != nil {
			return nil, err
		}
		t.bpe = m
	}
	t.loadSpecialIDs(f)
	t.addBOS = f.Bool("tokenizer.ggml.add_bos_token", t.addBOS)
	t.addEOS = f.Bool("tokenizer.ggml.add_eos_token", t.addEOS)
	t.detectEOG()
	t.buildSpecialCache()
	t.buildPieces()
	t.applyModelAttrs(f.String("general.name", ""), f.String("tokenizer.ggml.pre", ""))
	return t, nil
}

// loadTokens reads texts, scores and types and builds the text index.
func (t *Tokenizer) loadTokens(f *gguf.File) error {
	texts := f.Strings("tokenizer.ggml.tokens")
	if len(texts) == 0 {
		return fmt.Errorf("tokenizer: missing or empty tokenizer.ggml.tokens")
	}
	if len(texts) > 1<<31-1 {
		return fmt.Errorf("tokenizer: %d tokens is too many", len(texts))
	}
	scores := f.Float32s("tokenizer.ggml.scores")
	if _, present := f.Lookup("tokenizer.ggml.scores"); present && len(scores) != len(texts) {
		return fmt.Errorf("tokenizer: %d scores for %d tokens", len(scores), len(texts))
	}
	types := f.Int32s("tokenizer.ggml.token_type")
	if _, present := f.Lookup("tokenizer.ggml.token_type"); present && len(types) != len(texts) {
		return fmt.Errorf("tokenizer: %d token types for %d tokens", len(types), len(texts))
	}
	t.tokens = make([]token, len(texts))
	t.byText = make(map[string]int32, len(texts))
	for i, s := range texts {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]"
		}
		tok := token{text: s, attr: attrNormal}
		if scores != nil {
			tok.score = scores[i]
		}
		if types != nil {
			tok.attr = attrFromType(types[i])
		}
		t.tokens[i] = tok
		t.byText[s] = int32(i)
	}
	return nil
}

// initSPMBytes finds each byte's fallback token: <0xXX>, else the byte
// itself as a one-character token.
func (t *Tokenizer) initSPMBytes() {
	const hex = "0123456789ABCDEF"
	for b := 0; b < 256; b++ {
		name := string([]byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'})
		id, ok := t.byText[name]
		if !ok {
			id, ok = t.byText[string([]byte{byte(b)})]
		}
		if !ok {
			id = noToken
		}
		t.spmBytes[b] = id
	}
}

// loadSpecialIDs applies the *_token_id keys; an id outside the vocabulary
// leaves the default in place, as llama.cpp does.
func (t *Tokenizer) loadSpecialIDs(f *gguf.File) {
	var fimPre, fimSuf, fimMid, fimPad, fimRep, fimSep, mask = noToken, noToken, noToken, noToken, noToken, noToken, noToken
	keys := []struct {
		key string
		id  *int32
	}{
		{"bos_token_id", &t.bos}, {"eos_token_id", &t.eos}, {"eot_token_id", &t.eot},
		{"eom_token_id", &t.eom}, {"unknown_token_id", &t.unk}, {"seperator_token_id", &t.sep},
		{"padding_token_id", &t.pad}, {"mask_token_id", &mask},
		{"fim_pre_token_id", &fimPre}, {"fim_suf_token_id", &fimSuf}, {"fim_mid_token_id", &fimMid},
		{"fim_pad_token_id", &fimPad}, {"fim_rep_token_id", &fimRep}, {"fim_sep_token_id", &fimSep},
		{"prefix_token_id", &fimPre}, {"suffix_token_id", &fimSuf}, {"middle_token_id", &fimMid},
	}
	for _, k := range keys {
		v, ok := f.Lookup("tokenizer.ggml." + k.key)
		if !ok {
			continue
		}
		if u, ok := v.Uint64(); ok && u < uint64(len(t.tokens)) {
			*k.id = int32(u)
		}
	}
	t.fim = fimIDs{pre: fimPre, suf: fimSuf, mid: fimMid, pad: fimPad, rep: fimRep, sep: fimSep}
}
