package tokenizer

import "unicode/utf8"

// StreamDecoder turns tokens into text as they arrive. Add returns only
// whole UTF-8 characters and keeps a character that is still incomplete
// until a later token finishes it; bytes that can never form a character
// come out as U+FFFD, so every returned string is valid UTF-8.
type StreamDecoder struct {
	t       *Tokenizer
	special bool
	pending []byte
}

// NewStreamDecoder starts a decoder that renders pieces with special=false.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// NewStreamDecoderSpecial starts a decoder that shows control tokens' text.
func (t *Tokenizer) NewStreamDecoderSpecial() *StreamDecoder {
	return &StreamDecoder{t: t, special: true}
}

// Add appends id's piece and returns the text that is now complete.
func (d *StreamDecoder) Add(id int32) string {
	if d.special {
		d.pending = append(d.pending, d.t.PieceSpecial(id)...)
	} else {
		d.pending = append(d.pending, d.t.Piece(id)...)
	}
	cut := completePrefix(d.pending)
	out := validText(d.pending[:cut])
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

// Flush returns whatever is held back (an unfinished character becomes
// U+FFFD) and resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := validText(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix is the length of b without a trailing sequence that is a
// valid but unfinished UTF-8 character.
func completePrefix(b []byte) int {
	for k := len(b) - 1; k >= 0 && k >= len(b)-utf8.UTFMax+1; k-- {
		if utf8.RuneStart(b[k]) {
			if !utf8.FullRune(b[k:]) {
				return k
			}
			break
		}
	}
	return len(b)
}

// validText converts b to a string, replacing each invalid byte by U+FFFD.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out)
}
