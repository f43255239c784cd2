package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// preConfig is one pre-tokenizer family: its splitting steps (applied in
// order, each refining the previous pieces) and its vocabulary defaults.
type preConfig struct {
	steps        []splitStep
	ignoreMerges bool // look a whole word up before merging (llama3)
	addBOS       bool // default for add_bos_token
	noBOS        bool // the family has no BOS token
}

var (
	pN = category(flagNumber, isDigit)
	pL = category(flagLetter, func(r rune) bool { return (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') })
	pP = category(flagPunct, func(r rune) bool {
		return r <= 0x7F && ((r >= '!' && r <= '#') || (r >= '%' && r <= '*') || (r >= ',' && r <= '/') ||
			r == ':' || r == ';' || r == '?' || r == '@' || (r >= '[' && r <= ']') || r == '_' || r == '{' || r == '}')
	})
	newline = runeSet("\r\n")

	// Classes of the DeepSeek LLM pattern, as code point ranges.
	dsLetters = rangeClass(parseRanges("A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943"))
	dsPunct   = rangeClass(parseRanges("!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002"))
	cjk       = rangeClass(parseRanges("\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF"))
	poroWord  = func(cp rune, f cpFlags) bool {
		return !reSpace(cp, f) && !runeSet("(|.,!?…。，、।۔،)")(cp, f)
	}

	run       = func(c classFn) splitStep { return regexStep{runMatcher{class: c}} }
	single    = func(c classFn) splitStep { return regexStep{runMatcher{class: c, single: true}} }
	spaceRun  = func(c classFn) splitStep { return regexStep{runMatcher{class: c, lead: leadSpace}} }
	blankRun  = func(c classFn) splitStep { return regexStep{runMatcher{class: c, lead: leadBlank}} }
	gpt2Steps = []splitStep{gpt2Step{}}
	starcoder = []splitStep{single(pN), gpt2Step{}}
	poro      = []splitStep{blankRun(poroWord)}
	llama3    = []splitStep{llama3Step{maxDigits: 3}}
	qwen2     = []splitStep{llama3Step{maxDigits: 1}}
)

// preConfigs maps tokenizer.ggml.pre to its family, following llama.cpp.
var preConfigs = map[string]preConfig{
	"default": {steps: []splitStep{run(union(pP, runeSet("$+<=>^~|"))), gpt2Step{}, run(pN), regexStep{digitTriples{}}}},
	"falcon":  {steps: []splitStep{run(union(pP, runeSet("$+<=>^~|`"))), gpt2Step{}, regexStep{digitTriples{}}}},
	"deepseek-llm": {steps: []splitStep{single(newline), spaceRun(dsLetters), spaceRun(dsPunct),
		regexStep{trailingSpace{}}, run(cjk), run(pN)}},
	"deepseek-coder": {steps: []splitStep{single(newline), spaceRun(pL), spaceRun(pP), run(cjk), single(pN)}},
	"llama3":         {steps: llama3, ignoreMerges: true, addBOS: true},
	"dbrx":           {steps: llama3},
	"chatglm-bpe":    {steps: llama3, noBOS: true},
	"qwen2":          {steps: qwen2},
	"viking":         {steps: append(append([]splitStep{}, poro...), single(pN))},
	"poro-chat":      {steps: poro},
	"gpt-2":          {steps: gpt2Steps},
	"starcoder":      {steps: starcoder},
}

// preAliases names the families that share another's configuration.
var preAliases = map[string]string{
	"llama-v3": "llama3", "llama-bpe": "llama3", "falcon3": "llama3", "smaug-bpe": "dbrx",
	"deepseek-r1-qwen": "qwen2", "megrez": "qwen2", "stablelm2": "qwen2",
	"mpt": "gpt-2", "phi-2": "gpt-2", "jina-es": "gpt-2", "jina-de": "gpt-2", "gigachat": "gpt-2",
	"jina-v1-en": "gpt-2", "jina-v2-es": "gpt-2", "jina-v2-de": "gpt-2", "jina-v2-code": "gpt-2",
	"roberta-bpe": "gpt-2", "olmo": "gpt-2", "jais": "gpt-2",
	"refact": "starcoder", "command-r": "starcoder", "smollm": "starcoder", "codeshell": "starcoder",
	"exaone": "starcoder", "minerva-7b": "starcoder",
	"bloom": "poro-chat", "gpt3-finnish": "poro-chat",
}

func lookupPre(name string) (*preConfig, error) {
	if alias, ok := preAliases[name]; ok {
		name = alias
	}
	if name == "" {
		name = "default"
	}
	cfg, ok := preConfigs[name]
	if !ok {
		return nil, fmt.Errorf("tokenizer: unsupported pre-tokenizer %q", name)
	}
	return &cfg, nil
}

// parseRanges reads a bracket body of single characters and a-b ranges
// into [lo, hi] pairs.
func parseRanges(s string) []rune {
	rs := []rune(s)
	var out []rune
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			out = append(out, rs[i], rs[i+2])
			i += 2
			continue
		}
		out = append(out, rs[i], rs[i])
	}
	return out
}

// decodeText decodes s the way llama.cpp does before pre-tokenizing. It
// returns the text those code points re-encode to (s itself when s is
// valid UTF-8) and fills c.
func decodeText(s string, c *cpText) string {
	if !utf8.ValidString(s) {
		b := make([]byte, 0, len(s)+8)
		for i := 0; i < len(s); {
			cp, n := decodeCP(s, i)
			b = appendCP(b, cp)
			i += n
		}
		s = string(b)
	}
	c.cps, c.flags, c.offs = c.cps[:0], c.flags[:0], c.offs[:0]
	for i := 0; i < len(s); {
		cp, n := rune(s[i]), 1
		if cp >= 0x80 {
			cp, n = decodeCP(s, i)
		}
		c.cps = append(c.cps, cp)
		c.flags = append(c.flags, flagsOf(cp))
		c.offs = append(c.offs, i)
		i += n
	}
	c.offs = append(c.offs, len(s))
	return s
}

// preSplitter runs pre-tokenizer steps with reusable buffers.
type preSplitter struct {
	c            cpText
	chunks, next []int
	bounds       []int
}

// split cuts s into words, returned as byte bounds: word k is
// text[bounds[k]:bounds[k+1]] of the returned normalised text.
func (p *preSplitter) split(s string, steps []splitStep) (string, []int) {
	s = decodeText(s, &p.c)
	p.chunks = append(p.chunks[:0], len(p.c.cps))
	for _, st := range steps {
		p.next = p.next[:0]
		pos := 0
		for _, n := range p.chunks {
			p.next = st.split(&p.c, pos, pos+n, p.next)
			pos += n
		}
		p.chunks, p.next = p.next, p.chunks
	}
	p.bounds = append(p.bounds[:0], 0)
	pos := 0
	for _, n := range p.chunks {
		pos += n
		p.bounds = append(p.bounds, p.c.offs[pos])
	}
	return s, p.bounds
}
