package jinja

import (
	"fmt"
	"strings"
)

// A segment is a piece of the template source: text, an expression
// ({{ }}), a statement ({% %}) or a comment ({# #}).
type segment struct {
	kind      byte   // 't' text, 'e' expression, 's' statement, 'c' comment
	body      string // text, or the tag's inside without the delimiters and dashes
	trimLeft  bool   // {{- : strip whitespace before
	trimRight bool   // -}} : strip whitespace after
	keepLeft  bool   // {%+ : no lstrip
	line      int
	tagKind   string // statement keyword (for trim_blocks decisions)
}

// split cuts src into segments and applies the whitespace rules (see the
// package doc).
func split(src string) ([]segment, error) {
	var segs []segment
	line := 1
	for len(src) > 0 {
		i := indexTagStart(src)
		if i < 0 {
			segs = append(segs, segment{kind: 't', body: src, line: line})
			break
		}
		if i > 0 {
			segs = append(segs, segment{kind: 't', body: src[:i], line: line})
			line += strings.Count(src[:i], "\n")
			src = src[i:]
		}
		seg, n, err := readTag(src, line)
		if err != nil {
			return nil, err
		}
		if seg.kind == 's' && isRaw(seg.body) {
			rest := src[n:]
			k := findEndRaw(rest)
			if k < 0 {
				return nil, fmt.Errorf("line %d: raw without endraw", line)
			}
			endSeg, m, err := readTag(rest[k:], line)
			if err != nil {
				return nil, err
			}
			segs = append(segs, seg, segment{kind: 't', body: rest[:k], line: line})
			seg, n = endSeg, n+k+m
		}
		segs = append(segs, seg)
		line += strings.Count(src[:n], "\n")
		src = src[n:]
	}
	applyWhitespace(segs)
	return segs, nil
}

func isRaw(body string) bool { return strings.TrimSpace(body) == "raw" }

// findEndRaw finds the "{%" of the endraw tag in s.
func findEndRaw(s string) int {
	for i := 0; ; {
		j := strings.Index(s[i:], "{%")
		if j < 0 {
			return -1
		}
		k := i + j + 2
		for k < len(s) && (s[k] == '-' || s[k] == '+' || s[k] == ' ' || s[k] == '\t' || s[k] == '\n') {
			k++
		}
		if strings.HasPrefix(s[k:], "endraw") {
			return i + j
		}
		i = i + j + 2
	}
}

// indexTagStart finds the next "{{", "{%" or "{#".
func indexTagStart(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '{' && (s[i+1] == '{' || s[i+1] == '%' || s[i+1] == '#') {
			return i
		}
	}
	return -1
}

// readTag reads the tag at the start of s, skipping quoted strings inside
// expressions and statements, and returns it and its length.
func readTag(s string, line int) (segment, int, error) {
	kind := map[byte]byte{'{': 'e', '%': 's', '#': 'c'}[s[1]]
	closer := map[byte]string{'e': "}}", 's': "%}", 'c': "#}"}[kind]
	seg := segment{kind: kind, line: line}
	i := 2
	if i < len(s) && s[i] == '-' {
		seg.trimLeft, i = true, i+1
	} else if i < len(s) && s[i] == '+' {
		seg.keepLeft, i = true, i+1
	}
	start := i
	var quote byte
	depth := 0 // open brackets
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case kind != 'c' && (c == '\'' || c == '"'):
			quote = c
		case kind != 'c' && depth > 0 && (c == '}' || c == ']' || c == ')'):
			depth-- // "}}" inside {{ {'a': {'b': 1}} }} closes a dict, not the tag
		case kind != 'c' && (c == '{' || c == '[' || c == '('):
			depth++
		case strings.HasPrefix(s[i:], closer):
			body := s[start:i]
			if strings.HasSuffix(body, "-") {
				seg.trimRight, body = true, body[:len(body)-1]
			} else if strings.HasSuffix(body, "+") && kind != 'e' {
				body = body[:len(body)-1]
			}
			seg.body = body
			if kind == 's' {
				seg.tagKind, _, _ = strings.Cut(strings.TrimSpace(body), " ")
			}
			return seg, i + len(closer), nil
		}
	}
	return seg, 0, fmt.Errorf("line %d: unclosed %q", line, s[:2])
}

// applyWhitespace edits the text segments: "-" markers strip all
// whitespace on their side; otherwise lstrip_blocks removes the blanks
// from a line's start to a tag, trim_blocks the newline after a statement
// or comment, and the template's final newline goes.
func applyWhitespace(segs []segment) {
	for i := range segs {
		s := &segs[i]
		if s.kind != 't' {
			continue
		}
		text := s.body
		var next, prev *segment
		if i+1 < len(segs) {
			next = &segs[i+1]
		}
		if i > 0 {
			prev = &segs[i-1]
		}
		if next != nil && next.trimLeft {
			text = strings.TrimRight(text, " \t\r\n\f\v")
		} else if next != nil && !next.keepLeft {
			j := len(text)
			for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
				j--
			}
			if (j == 0 && i == 0) || (j > 0 && text[j-1] == '\n') {
				text = text[:j]
			}
		}
		if prev != nil && prev.trimRight {
			text = strings.TrimLeft(text, " \t\r\n\f\v")
		} else if prev != nil && prev.kind != 'e' {
			text = strings.TrimPrefix(text, "\n")
		}
		if next == nil && strings.HasSuffix(text, "\n") {
			text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		}
		s.body = text
	}
}
