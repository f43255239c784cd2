package tokenizer

import "fmt"

// Encode tokenizes text like llama_tokenize. With addSpecial it adds BOS
// and EOS as the vocabulary asks (AddBOS, AddEOS); with parseSpecial the
// text of control tokens (such as "<s>") becomes those tokens, otherwise
// only user-defined tokens are recognised in the text. It never fails on
// any input text; an error means the vocabulary lacks a BOS/EOS it needs.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	out := make([]int32, 0, len(text)/4+2)
	if addSpecial && t.addBOS {
		if !t.valid(t.bos) {
			return nil, fmt.Errorf("tokenizer: vocabulary asks for BOS but has no valid BOS id (%d)", t.bos)
		}
		out = append(out, t.bos)
	}
	frags := t.partition(text, parseSpecial)
	if t.kind == SPM {
		out = t.encodeSPM(text, frags, out)
	} else {
		out = t.encodeBPE(text, frags, out)
	}
	if addSpecial && t.addEOS {
		if !t.valid(t.eos) {
			return nil, fmt.Errorf("tokenizer: vocabulary asks for EOS but has no valid EOS id (%d)", t.eos)
		}
		out = append(out, t.eos)
	}
	return out, nil
}

// encodeSPM prefixes a space to raw text at the start and after a special
// token (if add_space_prefix), as llama.cpp does.
func (t *Tokenizer) encodeSPM(text string, frags []fragment, out []int32) []int32 {
	s := spmSession{t: t}
	prevSpecial := true
	for _, fr := range frags {
		if fr.id != noToken {
			out = append(out, fr.id)
			prevSpecial = true
			continue
		}
		piece := text[fr.start:fr.end]
		if t.addSpacePrefix && prevSpecial {
			piece = " " + piece
		}
		out = s.encode(piece, out)
		prevSpecial = false
	}
	return out
}

func (t *Tokenizer) encodeBPE(text string, frags []fragment, out []int32) []int32 {
	s := bpeSession{m: t.bpe}
	for _, fr := range frags {
		if fr.id != noToken {
			out = append(out, fr.id)
			continue
		}
		out = s.encode(text[fr.start:fr.end], out)
	}
	return out
}
