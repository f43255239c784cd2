package jinja

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A token of an expression or statement.
type token struct {
	kind byte // 'n' name, 's' string, 'i' int, 'f' float, 'o' operator, 0 end
	text string
	str  string // a string literal's value
	i    int64
	f    float64
}

// operators, longest first so that "**" wins over "*".
var operators = []string{"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
	"(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "="}

// tokenize splits a tag's inside into tokens.
func tokenize(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '_' || isLetter(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || isLetter(s[j]) || isDigit(s[j])) {
				j++
			}
			toks = append(toks, token{kind: 'n', text: s[i:j]})
			i = j
		case isDigit(c):
			t, n, err := number(s[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i += n
		case c == '\'' || c == '"':
			v, n, err := stringLit(s[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: 's', text: s[i : i+n], str: v})
			i += n
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				r, _ := utf8.DecodeRuneInString(s[i:])
				return nil, fmt.Errorf("unexpected character %q", r)
			}
			toks = append(toks, token{kind: 'o', text: op})
			i += len(op)
		}
	}
	return toks, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func number(s string) (token, int, error) {
	j, float := 0, false
	for j < len(s) && (isDigit(s[j]) || s[j] == '_') {
		j++
	}
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		float = true
		for j++; j < len(s) && (isDigit(s[j]) || s[j] == '_'); j++ {
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			float = true
			for j = k; j < len(s) && isDigit(s[j]); j++ {
			}
		}
	}
	text := strings.ReplaceAll(s[:j], "_", "")
	if float {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return token{}, 0, fmt.Errorf("bad number %q", s[:j])
		}
		return token{kind: 'f', text: s[:j], f: f}, j, nil
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return token{}, 0, fmt.Errorf("bad number %q", s[:j])
	}
	return token{kind: 'i', text: s[:j], i: i}, j, nil
}

// stringLit reads a quoted literal with Python's escapes.
func stringLit(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == q {
			return b.String(), i + 1, nil
		}
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n >= len(s) {
				return "", 0, fmt.Errorf("bad escape in string")
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil || v > utf8.MaxRune {
				return "", 0, fmt.Errorf("bad escape \\%c%s", e, s[i+1:i+1+n])
			}
			b.WriteRune(rune(v))
			i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}
