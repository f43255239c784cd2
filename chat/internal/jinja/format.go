package jinja

import (
	"fmt"
	"strconv"
	"strings"
)

// percentFormat is Python's "fmt % args" (and Jinja's format filter) for
// the conversions templates use: %s %r %d %i %f %x %%, with a width.
func (r *renderer) percentFormat(f string, args []value) (value, error) {
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ 0#.123456789", f[j]) >= 0 {
			j++
		}
		if j == len(f) {
			return nil, fmt.Errorf("incomplete format %q", f[i:])
		}
		spec, verb := f[i+1:j], f[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if next >= len(args) {
			return nil, fmt.Errorf("not enough arguments for format string")
		}
		a := args[next]
		next++
		s, err := formatOne(spec, verb, a)
		if err != nil {
			return nil, err
		}
		b.WriteString(s)
		if err := r.grow(b.Len()); err != nil {
			return nil, err
		}
	}
	if next < len(args) {
		return nil, fmt.Errorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

func formatOne(spec string, verb byte, a value) (string, error) {
	if len(spec) > 8 {
		return "", fmt.Errorf("format spec %%%s%c too long", spec, verb)
	}
	switch verb {
	case 's':
		return fmt.Sprintf("%"+spec+"s", str(a)), nil
	case 'r':
		var b strings.Builder
		repr(&b, a, true, 0)
		return fmt.Sprintf("%"+spec+"s", b.String()), nil
	case 'd', 'i', 'x':
		f, ok := toFloat(a)
		if !ok {
			return "", fmt.Errorf("%%%c format: a number is required, not %s", verb, typeName(a))
		}
		if verb == 'i' {
			verb = 'd'
		}
		return fmt.Sprintf("%"+spec+string(verb), int64(f)), nil
	case 'f', 'e', 'g':
		f, ok := toFloat(a)
		if !ok {
			return "", fmt.Errorf("%%%c format: a number is required, not %s", verb, typeName(a))
		}
		if !strings.Contains(spec, ".") && verb == 'f' {
			spec += ".6"
		}
		return fmt.Sprintf("%"+spec+string(verb), f), nil
	}
	return "", fmt.Errorf("unsupported format character %q", verb)
}

// braceFormat is Python's str.format for "{}", "{0}" and "{name}" fields
// without format specs.
func (r *renderer) braceFormat(f string, args []value, kw map[string]value) (value, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == '{' && i+1 < len(f) && f[i+1] == '{', c == '}' && i+1 < len(f) && f[i+1] == '}':
			b.WriteByte(c)
			i++
		case c == '{':
			end := strings.IndexByte(f[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("single '{' in format string")
			}
			field := f[i+1 : i+end]
			i += end
			var v value
			if field == "" {
				if auto >= len(args) {
					return nil, fmt.Errorf("format: not enough arguments")
				}
				v, auto = args[auto], auto+1
			} else if n, err := strconv.Atoi(field); err == nil {
				if n < 0 || n >= len(args) {
					return nil, fmt.Errorf("format: no argument %d", n)
				}
				v = args[n]
			} else if x, ok := kw[field]; ok {
				v = x
			} else {
				return nil, fmt.Errorf("format: no argument %q", field)
			}
			b.WriteString(str(v))
			if err := r.grow(b.Len()); err != nil {
				return nil, err
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
