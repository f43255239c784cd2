package tokenizer

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"time"
)

// reWS is \s as the splitters define it, for Go's regexp (whose \s lacks
// \v and all non-ASCII space).
const reWS = `[\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]`

// regexpPieces splits s like one std::regex pass: matches and the gaps
// between them, as code point counts.
func regexpPieces(re *regexp.Regexp, s string) []int {
	var out []int
	pos := 0
	count := func(a, b int) int { return len([]rune(s[a:b])) }
	for _, m := range re.FindAllStringIndex(s, -1) {
		if m[0] > pos {
			out = append(out, count(pos, m[0]))
		}
		out = append(out, count(m[0], m[1]))
		pos = m[1]
	}
	if pos < len(s) {
		out = append(out, count(pos, len(s)))
	}
	return out
}

// gpt2Pieces is the GPT-2 pattern run with Go's regexp, with the
// look-ahead of \s+(?!\S) applied by hand.
func gpt2Pieces(s string) []int {
	re := regexp.MustCompile(`^(?:'s|'t|'re|'ve|'m|'ll|'d| ?\pL+| ?\pN+| ?[^` + reWS[1:len(reWS)-1] + `\pL\pN]+|(` + reWS + `+))`)
	rs := []rune(s)
	var out []int
	for pos := 0; pos < len(rs); {
		m := re.FindStringSubmatchIndex(string(rs[pos:]))
		n := 1
		if m != nil {
			n = len([]rune(string(rs[pos:])[:m[1]]))
			if m[2] >= 0 && n > 1 && pos+n < len(rs) {
				n-- // \s+(?!\S): leave the last space to the next word
			}
		}
		out = append(out, n)
		pos += n
	}
	return out
}

func TestSplittersMatchGoRegexp(t *testing.T) {
	cases := []struct {
		name string
		step splitStep
		re   string
	}{
		{"newline", single(newline), `[\r\n]`},
		{"space-letters", spaceRun(pL), reWS + `?\pL+`},
		{"space-punct", spaceRun(pP), reWS + `?\pP+`},
		{"digit", single(pN), `\pN`},
		{"digits", run(pN), `\pN+`},
		{"punct-default", run(union(pP, runeSet("$+<=>^~|"))), `[\pP$+<=>^~|]+`},
		{"digit-triples", regexStep{digitTriples{}}, `[0-9][0-9][0-9]`},
		{"trailing-space", regexStep{trailingSpace{}}, reWS + `+$`},
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	var p preSplitter
	for _, c := range cases {
		re := regexp.MustCompile(c.re)
		for range 300 {
			text := randomText(rng, 1+rng.IntN(80))
			_, bounds := p.split(text, []splitStep{c.step})
			got := runeCounts(text, bounds)
			if want := regexpPieces(re, text); !slices.Equal(got, want) {
				t.Fatalf("%s on %q:\n got %v\nwant %v", c.name, text, got, want)
			}
		}
	}
	for range 300 {
		text := randomText(rng, 1+rng.IntN(80))
		_, bounds := p.split(text, []splitStep{gpt2Step{}})
		if got, want := runeCounts(text, bounds), gpt2Pieces(text); !slices.Equal(got, want) {
			t.Fatalf("gpt2 on %q:\n got %v\nwant %v", text, got, want)
		}
	}
}

func runeCounts(text string, bounds []int) []int {
	var out []int
	for k := 0; k+1 < len(bounds); k++ {
		out = append(out, len([]rune(text[bounds[k]:bounds[k+1]])))
	}
	return out
}
