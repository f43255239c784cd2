package tokenizer

import (
	"sync"
	"unicode"
)

// cpFlags classifies a code point the way llama.cpp's unicode tables do:
// one general-category bit plus a separate White_Space bit.
type cpFlags uint16

const (
	flagUndefined cpFlags = 1 << iota // unassigned (Cn)
	flagNumber                        // \p{N}
	flagLetter                        // \p{L}
	flagSeparator                     // \p{Z}
	flagMark                          // \p{M}
	flagPunct                         // \p{P}
	flagSymbol                        // \p{S}
	flagControl                       // \p{C} except Cn
	flagSpace                         // White_Space property

	categoryMask cpFlags = 0xFF
)

const maxCodepoint = 0x110000

var (
	flagTableOnce sync.Once
	flagTable     []cpFlags
)

// whiteSpace lists the White_Space code points (Unicode PropList).
var whiteSpace = []rune{
	0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
	0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
	0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
}

// buildFlagTable fills one entry per code point by walking the category
// range tables, which is far cheaper than classifying each code point.
func buildFlagTable() {
	t := make([]cpFlags, maxCodepoint)
	for i := range t {
		t[i] = flagUndefined
	}
	cats := []struct {
		tab  *unicode.RangeTable
		flag cpFlags
	}{
		{unicode.L, flagLetter}, {unicode.N, flagNumber}, {unicode.M, flagMark},
		{unicode.P, flagPunct}, {unicode.S, flagSymbol}, {unicode.Z, flagSeparator},
		{unicode.C, flagControl},
	}
	for _, c := range cats {
		for _, r := range c.tab.R16 {
			for cp := uint32(r.Lo); cp <= uint32(r.Hi); cp += uint32(r.Stride) {
				t[cp] = c.flag
			}
		}
		for _, r := range c.tab.R32 {
			for cp := r.Lo; cp <= r.Hi; cp += r.Stride {
				t[cp] = c.flag
			}
		}
	}
	for _, cp := range whiteSpace {
		t[cp] |= flagSpace
	}
	flagTable = t
}

// flagsOf returns the class of cp; code points outside Unicode are undefined.
func flagsOf(cp rune) cpFlags {
	flagTableOnce.Do(buildFlagTable)
	if cp < 0 || cp >= maxCodepoint {
		return flagUndefined
	}
	return flagTable[cp]
}

// utf8SeqLen is the sequence length announced by a lead byte, judged by its
// high nibble only (continuation and invalid bytes count as 1), as SPM and
// BPE symbol splitting do in llama.cpp.
func utf8SeqLen(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// decodeCP decodes one code point at s[i] with llama.cpp's lenient rules:
// overlong forms and surrogates are accepted, but a bad lead byte, a missing
// continuation byte or a value above U+10FFFF yields U+FFFD for one byte.
func decodeCP(s string, i int) (cp rune, size int) {
	b0 := s[i]
	if b0 < 0x80 {
		return rune(b0), 1
	}
	n := 0
	switch {
	case b0&0x40 == 0:
		return unicode.ReplacementChar, 1
	case b0&0x20 == 0:
		n, cp = 2, rune(b0&0x1F)
	case b0&0x10 == 0:
		n, cp = 3, rune(b0&0x0F)
	case b0&0x08 == 0:
		n, cp = 4, rune(b0&0x07)
	default:
		return unicode.ReplacementChar, 1
	}
	if i+n > len(s) {
		return unicode.ReplacementChar, 1
	}
	for k := 1; k < n; k++ {
		c := s[i+k]
		if c&0xC0 != 0x80 {
			return unicode.ReplacementChar, 1
		}
		cp = cp<<6 | rune(c&0x3F)
	}
	if cp >= maxCodepoint {
		return unicode.ReplacementChar, 1
	}
	return cp, n
}

// appendCP encodes cp in UTF-8 without rejecting surrogates, so that text
// decoded by decodeCP re-encodes to what llama.cpp produces.
func appendCP(b []byte, cp rune) []byte {
	switch {
	case cp < 0x80:
		return append(b, byte(cp))
	case cp < 0x800:
		return append(b, 0xC0|byte(cp>>6), 0x80|byte(cp&0x3F))
	case cp < 0x10000:
		return append(b, 0xE0|byte(cp>>12), 0x80|byte(cp>>6&0x3F), 0x80|byte(cp&0x3F))
	}
	return append(b, 0xF0|byte(cp>>18), 0x80|byte(cp>>12&0x3F), 0x80|byte(cp>>6&0x3F), 0x80|byte(cp&0x3F))
}

// byteLevel is GPT-2's reversible byte-to-character table: printable Latin-1
// bytes stand for themselves, the other 68 bytes take U+0100 upwards.
var byteLevel, byteLevelInverse = buildByteLevel()

func buildByteLevel() (fwd [256]rune, inv map[rune]byte) {
	printable := func(b int) bool {
		return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	inv = make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		if printable(b) {
			fwd[b] = rune(b)
		} else {
			fwd[b] = next
			next++
		}
		inv[fwd[b]] = byte(b)
	}
	return fwd, inv
}

// fromByteLevel maps a byte-level token text back to raw bytes; ok is false
// if it holds a character outside the table (such a text can never be
// produced by encoding input bytes).
func fromByteLevel(s string) (raw []byte, ok bool) {
	raw = make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		cp, n := decodeCP(s, i)
		b, found := byteLevelInverse[cp]
		if !found {
			return nil, false
		}
		raw = append(raw, b)
		i += n
	}
	return raw, true
}
