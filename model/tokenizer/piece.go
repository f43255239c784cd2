package tokenizer

import (
	"fmt"
	"strings"
)

// buildPieces renders every token with special=true semantics, once.
func (t *Tokenizer) buildPieces() {
	t.pieces = make([][]byte, len(t.tokens))
	for i := range t.tokens {
		t.pieces[i] = t.render(&t.tokens[i])
	}
}

// render is llama_token_to_piece with special=true: control, unknown and
// user-defined tokens show their text; normal SPM tokens turn U+2581 into
// spaces; byte tokens give their byte; normal BPE tokens are mapped back
// from byte-level characters; anything else renders empty.
func (t *Tokenizer) render(tok *token) []byte {
	switch {
	case tok.attr&(attrUnknown|attrControl|attrUserDefined) != 0:
		return []byte(tok.text)
	case tok.attr&attrNormal != 0 && t.kind == SPM:
		return []byte(strings.ReplaceAll(tok.text, "\u2581", " "))
	case tok.attr&attrNormal != 0:
		return decodeByteLevelPiece(tok.text)
	case tok.attr&attrByte != 0 && t.kind == SPM:
		return []byte{parseByteToken(tok.text)}
	}
	return nil
}

// decodeByteLevelPiece maps each character back to its byte; a character
// outside the table is spelled out in llama.cpp's [UNK_BYTE_0x..] form.
func decodeByteLevelPiece(text string) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		cp, n := decodeCP(text, i)
		if b, ok := byteLevelInverse[cp]; ok {
			out = append(out, b)
		} else {
			enc := appendCP(nil, cp)
			out = fmt.Appendf(out, "[UNK_BYTE_0x%x%s]", enc, text)
		}
		i += n
	}
	return out
}

// parseByteToken reads the XX of "<0xXX>"; a malformed name gives 0.
func parseByteToken(s string) byte {
	if len(s) < 5 {
		return 0
	}
	var v byte
	for _, c := range []byte(s[3:5]) {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= c - '0'
		case c >= 'a' && c <= 'f':
			v |= c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v |= c - 'A' + 10
		default:
			return 0
		}
	}
	return v
}

// Piece renders id like llama_token_to_piece(special=false): control and
// unknown tokens are empty. An id outside the vocabulary gives nil. The
// returned slice is shared; do not modify it.
func (t *Tokenizer) Piece(id int32) []byte {
	if !t.valid(id) || t.tokens[id].attr&(attrUnknown|attrControl) != 0 {
		return nil
	}
	return t.pieces[id]
}

// PieceSpecial renders id like llama_token_to_piece(special=true), so
// control tokens show their text ("<s>").
func (t *Tokenizer) PieceSpecial(id int32) []byte {
	if !t.valid(id) {
		return nil
	}
	return t.pieces[id]
}

// Decode concatenates the pieces of ids byte for byte (special=false). The
// result may hold invalid UTF-8 if the ids end inside a character; use a
// StreamDecoder for incremental, always-valid text.
func (t *Tokenizer) Decode(ids []int32) string {
	var b []byte
	for _, id := range ids {
		b = append(b, t.Piece(id)...)
	}
	return string(b)
}
