package tokenizer

import "strings"

// spmSymbol is a piece of the escaped text in a doubly linked list.
type spmSymbol struct {
	start, n   int32
	prev, next int32
}

// spmSession holds scratch space reused across fragments of one Encode.
type spmSession struct {
	t    *Tokenizer
	text string
	syms []spmSymbol
	heap mergeHeap
}

var spaceEscape = strings.NewReplacer(" ", "\u2581")

// encode tokenizes one raw fragment; space prefixing is the caller's. When
// the vocabulary allows (see wordBoundaries), the escaped text is cut before
// each word's leading U+2581 and the pieces are merged independently, which
// keeps the heap small without changing the result.
func (s *spmSession) encode(fragment string, out []int32) []int32 {
	s.text = spaceEscape.Replace(fragment)
	segStart := 0
	for off := 0; off < len(s.text); off += min(utf8SeqLen(s.text[off]), len(s.text)-off) {
		if s.t.spmWordCuts && off > segStart && isWordStart(s.text, off) {
			out = s.encodeSegment(segStart, off, out)
			segStart = off
		}
	}
	return s.encodeSegment(segStart, len(s.text), out)
}

const escapedSpace = "\u2581"

// isWordStart reports a U+2581 at off that does not follow another one.
func isWordStart(text string, off int) bool {
	return strings.HasPrefix(text[off:], escapedSpace) && (off < 3 || text[off-3:off] != escapedSpace)
}

// wordBoundaries reports whether no token contains U+2581 after a byte
// sequence other than U+2581. Then no token can span a point where
// isWordStart holds, so merges never cross it.
func wordBoundaries(tokens []token) bool {
	for _, tok := range tokens {
		for i := 1; i < len(tok.text); i++ {
			if isWordStart(tok.text, i) {
				return false
			}
		}
	}
	return true
}

// encodeSegment runs the score-ordered merges over text[start:end], whose
// start is a symbol boundary.
func (s *spmSession) encodeSegment(start, end int, out []int32) []int32 {
	s.syms = s.syms[:0]
	s.heap.reset()
	for off := start; off < end; {
		n := min(utf8SeqLen(s.text[off]), end-off)
		idx := int32(len(s.syms))
		next := idx + 1
		if off+n == end {
			next = -1
		}
		s.syms = append(s.syms, spmSymbol{start: int32(off), n: int32(n), prev: idx - 1, next: next})
		off += n
	}
	for i := 1; i < len(s.syms); i++ {
		s.tryBigram(int32(i-1), int32(i))
	}
	for s.heap.len() > 0 {
		b := s.heap.pop()
		left := b.left()
		l, r := &s.syms[left], &s.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // stale: one side was merged since this pair was queued
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = left
		}
		s.tryBigram(l.prev, left)
		s.tryBigram(left, l.next)
	}
	if len(s.syms) == 0 {
		return out
	}
	for i := int32(0); i != -1; i = s.syms[i].next {
		out = s.emit(s.syms[i], out)
	}
	return out
}

func (s *spmSession) tryBigram(left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := s.syms[left], s.syms[right]
	id, ok := s.t.byText[s.text[l.start:r.start+r.n]]
	if !ok {
		return
	}
	s.heap.push(candidate{key: spmKey(s.t.tokens[id].score, left), right: right, size: l.n + r.n})
}

// emit writes a final symbol: its token, or one byte token per byte.
func (s *spmSession) emit(sym spmSymbol, out []int32) []int32 {
	text := s.text[sym.start : sym.start+sym.n]
	if id, ok := s.t.byText[text]; ok {
		return append(out, id)
	}
	for i := 0; i < len(text); i++ {
		id := s.t.spmBytes[text[i]]
		if id == noToken {
			id = s.t.unk // the vocabulary cannot spell this byte at all
		}
		if id != noToken {
			out = append(out, id)
		}
	}
	return out
}
