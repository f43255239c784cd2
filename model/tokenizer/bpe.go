package tokenizer

import (
	"fmt"
	"strings"
)

// bpeMerge is one merge rule: its rank and the token it produces (noToken
// when the merged text is not itself a token).
type bpeMerge struct{ rank, id int32 }

// bpeModel is a byte-level BPE vocabulary indexed by raw bytes: byte-level
// texts are decoded once at load, so words are never re-encoded.
type bpeModel struct {
	pre          *preConfig
	rawID        map[string]int32    // raw bytes -> token id
	pairs        map[uint64]bpeMerge // (left id, right id) -> merge
	strPairs     map[string]bpeMerge // merges whose parts are not both tokens
	byteID       [256]int32          // token of a lone byte
	byteFallback [256][]int32        // tokens for an unmerged byte without one
}

func newBPEModel(t *Tokenizer, merges []string, pre *preConfig) (*bpeModel, error) {
	if merges == nil {
		return nil, fmt.Errorf("tokenizer: missing tokenizer.ggml.merges for a gpt2 tokenizer")
	}
	m := &bpeModel{
		pre:      pre,
		rawID:    make(map[string]int32, len(t.tokens)),
		pairs:    make(map[uint64]bpeMerge, len(merges)),
		strPairs: map[string]bpeMerge{},
	}
	for text, id := range t.byText {
		if raw, ok := fromByteLevel(text); ok {
			m.rawID[string(raw)] = id
		}
	}
	for b := range 256 {
		m.byteID[b] = m.lookup(string([]byte{byte(b)}))
		enc := string(byteLevel[b])
		for i := 0; i < len(enc); i++ {
			if id, ok := t.byText[enc[i:i+1]]; ok {
				m.byteFallback[b] = append(m.byteFallback[b], id)
			}
		}
	}
	for rank, line := range merges {
		m.addMerge(int32(rank), line)
	}
	return m, nil
}

func (m *bpeModel) lookup(raw string) int32 {
	if id, ok := m.rawID[raw]; ok {
		return id
	}
	return noToken
}

// addMerge records "left right" (split at the first space after the first
// byte); the first rule for a pair wins.
func (m *bpeModel) addMerge(rank int32, line string) {
	if len(line) < 2 {
		return
	}
	sp := strings.IndexByte(line[1:], ' ')
	if sp < 0 {
		return
	}
	left, okL := fromByteLevel(line[:sp+1])
	right, okR := fromByteLevel(line[sp+2:])
	if !okL || !okR || len(left) == 0 || len(right) == 0 {
		return // can never match a symbol of encoded input
	}
	merge := bpeMerge{rank: rank, id: m.lookup(string(left) + string(right))}
	idL, idR := m.lookup(string(left)), m.lookup(string(right))
	if idL != noToken && idR != noToken {
		key := pairID(idL, idR)
		if _, dup := m.pairs[key]; !dup {
			m.pairs[key] = merge
		}
		return
	}
	key := string(appendPairKey(nil, string(left), string(right)))
	if _, dup := m.strPairs[key]; !dup {
		m.strPairs[key] = merge
	}
}

func pairID(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

// appendPairKey spells a (left, right) pair unambiguously.
func appendPairKey(b []byte, left, right string) []byte {
	n := len(left)
	b = append(b, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	return append(append(b, left...), right...)
}

type bpeSymbol struct {
	start, n   int32
	prev, next int32
	id         int32
}

// bpeSession holds scratch space reused across the words of one Encode.
type bpeSession struct {
	m    *bpeModel
	pre  preSplitter
	word string
	syms []bpeSymbol
	heap mergeHeap
	key  []byte
}

func (s *bpeSession) encode(fragment string, out []int32) []int32 {
	text, bounds := s.pre.split(fragment, s.m.pre.steps)
	for k := 0; k+1 < len(bounds); k++ {
		out = s.encodeWord(text[bounds[k]:bounds[k+1]], out)
	}
	return out
}

func (s *bpeSession) encodeWord(w string, out []int32) []int32 {
	if s.m.pre.ignoreMerges {
		if id, ok := s.m.rawID[w]; ok {
			return append(out, id)
		}
	}
	s.word = w
	s.syms = s.syms[:0]
	s.heap.reset()
	for i := 0; i < len(w); i++ {
		next := int32(i + 1)
		if i+1 == len(w) {
			next = -1
		}
		s.syms = append(s.syms, bpeSymbol{start: int32(i), n: 1, prev: int32(i - 1), next: next, id: s.m.byteID[w[i]]})
	}
	for i := 1; i < len(s.syms); i++ {
		s.tryBigram(int32(i-1), int32(i))
	}
	for s.heap.len() > 0 {
		b := s.heap.pop()
		left := b.left()
		l, r := &s.syms[left], &s.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // stale: one side changed since this pair was queued
		}
		l.n += r.n
		l.id = b.id
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = left
		}
		s.tryBigram(l.prev, left)
		s.tryBigram(left, l.next)
	}
	return s.emit(out)
}

func (s *bpeSession) tryBigram(left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := &s.syms[left], &s.syms[right]
	var merge bpeMerge
	var ok bool
	if l.id != noToken && r.id != noToken {
		merge, ok = s.m.pairs[pairID(l.id, r.id)]
	} else {
		s.key = appendPairKey(s.key[:0], s.text(l), s.text(r))
		merge, ok = s.m.strPairs[string(s.key)]
	}
	if ok {
		s.heap.push(candidate{key: bpeKey(merge.rank, left), right: right, size: l.n + r.n, id: merge.id})
	}
}

func (s *bpeSession) text(sym *bpeSymbol) string {
	return s.word[sym.start : sym.start+sym.n]
}

// emit writes the surviving symbols; one that is not a token falls back to
// the lone-byte tokens of its byte-level spelling, as llama.cpp does.
func (s *bpeSession) emit(out []int32) []int32 {
	for i := range s.syms {
		sym := &s.syms[i]
		if sym.n == 0 {
			continue
		}
		if sym.id != noToken {
			out = append(out, sym.id)
			continue
		}
		text := s.text(sym)
		for k := 0; k < len(text); k++ {
			out = append(out, s.m.byteFallback[text[k]]...)
		}
	}
	return out
}
