package tokenizer

// cpText is a fragment decoded into code points, with each code point's
// class and its byte offset in the (normalised) fragment.
type cpText struct {
	cps   []rune
	flags []cpFlags
	offs  []int // len(cps)+1 byte offsets
}

// splitStep refines one chunk [start, end) of code points, appending the
// lengths of the pieces that cover it to out.
type splitStep interface {
	split(c *cpText, start, end int, out []int) []int
}

// matcher finds the leftmost match at or after pos in a chunk ending at
// end; ms < 0 means none. Used to emulate one std::regex pass.
type matcher interface {
	next(c *cpText, pos, end int) (ms, me int)
}

// regexStep splits like llama.cpp's std::regex pass: every match and every
// gap between matches becomes a piece.
type regexStep struct{ m matcher }

func (s regexStep) split(c *cpText, start, end int, out []int) []int {
	pos := start
	for pos < end {
		ms, me := s.m.next(c, pos, end)
		if ms < 0 {
			break
		}
		if ms > pos {
			out = append(out, ms-pos)
		}
		out = append(out, me-ms)
		pos = me
	}
	if pos < end {
		out = append(out, end-pos)
	}
	return out
}

// classFn tests one code point (with its flags) for membership of a
// bracket expression or category as std::regex sees it.
type classFn func(cp rune, f cpFlags) bool

// leadKind is an optional one-character prefix of a run pattern.
type leadKind int

const (
	leadNone  leadKind = iota
	leadSpace          // \s?
	leadBlank          // a literal ' '?
)

// runMatcher matches lead? class+ (or a single class character).
type runMatcher struct {
	class  classFn
	lead   leadKind
	single bool
}

func (m runMatcher) next(c *cpText, pos, end int) (int, int) {
	for p := pos; p < end; p++ {
		if m.lead != leadNone && p+1 < end && m.isLead(c.cps[p], c.flags[p]) && m.class(c.cps[p+1], c.flags[p+1]) {
			return p, m.runEnd(c, p+1, end)
		}
		if m.class(c.cps[p], c.flags[p]) {
			return p, m.runEnd(c, p, end)
		}
	}
	return -1, -1
}

func (m runMatcher) isLead(cp rune, f cpFlags) bool {
	if m.lead == leadBlank {
		return cp == ' '
	}
	return reSpace(cp, f)
}

func (m runMatcher) runEnd(c *cpText, p, end int) int {
	if m.single {
		return p + 1
	}
	for p < end && m.class(c.cps[p], c.flags[p]) {
		p++
	}
	return p
}

// trailingSpace matches \s+$: the whitespace run that ends the chunk.
type trailingSpace struct{}

func (trailingSpace) next(c *cpText, pos, end int) (int, int) {
	q := end
	for q > pos && reSpace(c.cps[q-1], c.flags[q-1]) {
		q--
	}
	if q == end {
		return -1, -1
	}
	return q, end
}

// digitTriples matches [0-9][0-9][0-9], leftmost first.
type digitTriples struct{}

func (digitTriples) next(c *cpText, pos, end int) (int, int) {
	for p := pos; p+3 <= end; p++ {
		if isDigit(c.cps[p]) && isDigit(c.cps[p+1]) && isDigit(c.cps[p+2]) {
			return p, p + 3
		}
	}
	return -1, -1
}

func isDigit(cp rune) bool { return cp >= '0' && cp <= '9' }

// reSpace is \s of std::regex after llama.cpp maps every non-ASCII
// White_Space code point to U+000B: the C locale's six ASCII spaces.
func reSpace(cp rune, f cpFlags) bool {
	return cp == ' ' || (cp >= '\t' && cp <= '\r') || (cp >= 0x80 && f&flagSpace != 0)
}

// category builds \p{X} as matched on llama.cpp's collapsed text: ASCII by
// the given set, other code points by their general category alone.
func category(cat cpFlags, ascii func(rune) bool) classFn {
	return func(cp rune, f cpFlags) bool {
		if cp < 0x80 {
			return ascii(cp)
		}
		return f&flagSpace == 0 && f&categoryMask == cat
	}
}

// rangeClass is a bracket of code point ranges applied to the original
// code point; mapped whitespace never matches.
func rangeClass(ranges []rune) classFn {
	return func(cp rune, f cpFlags) bool {
		if cp >= 0x80 && f&flagSpace != 0 {
			return false
		}
		for i := 0; i+1 < len(ranges); i += 2 {
			if cp >= ranges[i] && cp <= ranges[i+1] {
				return true
			}
		}
		return false
	}
}

func union(fs ...classFn) classFn {
	return func(cp rune, f cpFlags) bool {
		for _, fn := range fs {
			if fn(cp, f) {
				return true
			}
		}
		return false
	}
}

func runeSet(s string) classFn {
	return func(cp rune, _ cpFlags) bool {
		for _, r := range s {
			if r == cp {
				return true
			}
		}
		return false
	}
}
