package jinja

import (
	"fmt"
	"strconv"
	"strings"
)

// toJSON is the tojson filter as Hugging Face's chat templates define it:
// Python's json.dumps with ensure_ascii off and keys in their order,
// ", " and ": " between items (",", ": " when indenting).
func (r *renderer) toJSON(v value, indent value) (value, error) {
	n := int64(-1)
	if indent != nil {
		var ok bool
		if n, ok = toInt(indent); !ok || n < 0 || n > 100 {
			return nil, fmt.Errorf("tojson indent %s", str(indent))
		}
	}
	var b strings.Builder
	if err := r.writeJSON(&b, v, int(n), 0); err != nil {
		return nil, err
	}
	return b.String(), nil
}

func (r *renderer) writeJSON(b *strings.Builder, v value, indent, level int) error {
	if err := r.grow(b.Len()); err != nil {
		return err
	}
	if level > maxDepth {
		return fmt.Errorf("tojson: nested deeper than %d", maxDepth)
	}
	sep := ", "
	nl := func(l int) {}
	if indent >= 0 {
		sep = ","
		nl = func(l int) { b.WriteString("\n" + strings.Repeat(" ", indent*l)) }
	}
	switch x := v.(type) {
	case nil, undefined:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		s := pyFloat(x)
		switch s {
		case "inf":
			s = "Infinity"
		case "-inf":
			s = "-Infinity"
		case "nan":
			s = "NaN"
		}
		b.WriteString(s)
	case string:
		jsonString(b, x)
	case *list:
		if len(x.items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range x.items {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(level + 1)
			if err := r.writeJSON(b, e, indent, level+1); err != nil {
				return err
			}
		}
		nl(level)
		b.WriteByte(']')
	case *dict:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(level + 1)
			jsonString(b, k)
			b.WriteString(": ")
			if err := r.writeJSON(b, x.m[k], indent, level+1); err != nil {
				return err
			}
		}
		nl(level)
		b.WriteByte('}')
	case *namespace:
		return r.writeJSON(b, x.d, indent, level)
	default:
		return fmt.Errorf("tojson: cannot serialise %s", typeName(v))
	}
	return nil
}

func jsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteRune(c)
			}
		}
	}
	b.WriteByte('"')
}
