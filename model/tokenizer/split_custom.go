package tokenizer

import "unicode"

// These two splitters reproduce llama.cpp's hand-written versions of the
// GPT-2 and Llama-3 pre-tokenizer patterns, including how they treat the
// chunk end (a position past the end has no class at all).

const outside rune = -1

type chunkView struct {
	c          *cpText
	start, end int
	prev       int // end of the last emitted piece
	out        []int
}

func (v *chunkView) flags(p int) cpFlags {
	if p < v.end {
		return v.c.flags[p]
	}
	return 0
}

func (v *chunkView) cp(p int) rune {
	if p < v.end {
		return v.c.cps[p]
	}
	return outside
}

func (v *chunkView) emit(end int) {
	if end > v.prev {
		v.out = append(v.out, end-v.prev)
	}
	v.prev = end
}

// contraction returns the length of 's 't 'm 'd 're 've 'll at pos, or 0.
func (v *chunkView) contraction(pos int, fold bool) int {
	if v.cp(pos) != '\'' || pos+1 >= v.end {
		return 0
	}
	lower := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	a := lower(v.cp(pos + 1))
	if a == 's' || a == 't' || a == 'm' || a == 'd' {
		return 2
	}
	if pos+2 >= v.end {
		return 0
	}
	b := lower(v.cp(pos + 2))
	if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
		return 3
	}
	return 0
}

// skipWhile advances from p while the class at p satisfies ok.
func (v *chunkView) skipWhile(p int, ok func(cpFlags) bool) int {
	for ok(v.flags(p)) {
		p++
	}
	return p
}

func isOther(f cpFlags) bool { return f&(flagSpace|flagLetter|flagNumber) == 0 && f != 0 }

// spaceRun counts whitespace from pos and the end of its last \r or \n.
func (v *chunkView) spaceRun(pos int) (n, lastNewline int) {
	for v.flags(pos+n)&flagSpace != 0 {
		if c := v.cp(pos + n); c == '\r' || c == '\n' {
			lastNewline = pos + n + 1
		}
		n++
	}
	return n, lastNewline
}

// trailingSpaces handles \s+(?!\S) and \s+ at pos; it always advances.
func (v *chunkView) trailingSpaces(pos int) int {
	n, _ := v.spaceRun(pos)
	switch {
	case n > 1 && v.cp(pos+n) != outside:
		pos += n - 1
	case n > 0:
		pos += n
	default:
		pos++
	}
	v.emit(pos)
	return pos
}

// gpt2Step: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
type gpt2Step struct{}

func (gpt2Step) split(c *cpText, start, end int, out []int) []int {
	v := chunkView{c: c, start: start, end: end, prev: start, out: out}
	for pos := start; pos < end; {
		if n := v.contraction(pos, false); n > 0 {
			pos += n
			v.emit(pos)
			continue
		}
		cp := v.cp(pos)
		f2 := v.flags(pos)
		skip := 0
		if cp == ' ' {
			f2, skip = v.flags(pos+1), 1
		}
		var class func(cpFlags) bool
		switch {
		case f2&flagLetter != 0:
			class = func(f cpFlags) bool { return f&flagLetter != 0 }
		case f2&flagNumber != 0:
			class = func(f cpFlags) bool { return f&flagNumber != 0 }
		case isOther(f2):
			class = isOther
		}
		if class != nil {
			pos = v.skipWhile(pos+skip, class)
			v.emit(pos)
			continue
		}
		pos = v.trailingSpaces(pos)
	}
	return v.out
}

// llama3Step: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,K}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ with K = maxDigits.
type llama3Step struct{ maxDigits int }

func (s llama3Step) split(c *cpText, start, end int, out []int) []int {
	v := chunkView{c: c, start: start, end: end, prev: start, out: out}
	letter := func(f cpFlags) bool { return f&flagLetter != 0 }
	for pos := start; pos < end; {
		if n := v.contraction(pos, true); n > 0 {
			pos += n
			v.emit(pos)
			continue
		}
		cp, f := v.cp(pos), v.flags(pos)
		if cp != '\r' && cp != '\n' && f&flagNumber == 0 && (letter(f) || letter(v.flags(pos+1))) {
			pos = v.skipWhile(pos+1, letter)
			v.emit(pos)
			continue
		}
		if f&flagNumber != 0 {
			pos = v.digits(pos, s.maxDigits)
			continue
		}
		f2, skip := f, 0
		if cp == ' ' {
			f2, skip = v.flags(pos+1), 1
		}
		if f2&(flagSpace|flagLetter|flagNumber) == 0 && f != 0 {
			pos = v.skipWhile(pos+skip, isOther)
			for c := v.cp(pos); c == '\r' || c == '\n'; c = v.cp(pos) {
				pos++
			}
			v.emit(pos)
			continue
		}
		if _, nl := v.spaceRun(pos); nl > 0 {
			pos = nl
			v.emit(pos)
			continue
		}
		pos = v.trailingSpaces(pos)
	}
	return v.out
}

// digits emits a number run in pieces of at most k digits.
func (v *chunkView) digits(pos, k int) int {
	ini := pos
	for v.flags(pos)&flagNumber != 0 {
		pos++
		if pos-ini >= k {
			v.emit(pos)
			ini = pos
		}
	}
	v.emit(pos)
	return pos
}
