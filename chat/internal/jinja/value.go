package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Values are Go values of a few kinds:
//
//	nil        none
//	undefined  a missing variable, key or attribute
//	bool, int64, float64, string
//	*list      a list (or tuple), mutable by append
//	*dict      a dict with insertion-ordered keys (JSON output keeps them)
//	*namespace namespace(), whose attributes set can change
//	*macro, builtin  callables
type value any

type undefined struct{ name string }

type list struct{ items []value }

type dict struct {
	keys []string
	m    map[string]value
}

type namespace struct{ d *dict }

type builtin func(r *renderer, args []value, kw map[string]value) (value, error)

func newDict() *dict { return &dict{m: map[string]value{}} }

func (d *dict) set(k string, v value) {
	if _, ok := d.m[k]; !ok {
		d.keys = append(d.keys, k)
	}
	d.m[k] = v
}

func (d *dict) get(k string) (value, bool) {
	v, ok := d.m[k]
	return v, ok
}

// FromGo converts Go data (nil, bool, ints, floats, string, []any,
// []string, map[string]any with keys sorted, []map[string]any, and
// values of this package) to a template value.
func FromGo(x any) value {
	switch v := x.(type) {
	case nil, bool, int64, float64, string, *list, *dict, *namespace:
		return v
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case float32:
		return float64(v)
	case []any:
		l := &list{items: make([]value, len(v))}
		for i, e := range v {
			l.items[i] = FromGo(e)
		}
		return l
	case []string:
		l := &list{items: make([]value, len(v))}
		for i, e := range v {
			l.items[i] = e
		}
		return l
	case []map[string]any:
		l := &list{items: make([]value, len(v))}
		for i, e := range v {
			l.items[i] = FromGo(e)
		}
		return l
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := newDict()
		for _, k := range keys {
			d.set(k, FromGo(v[k]))
		}
		return d
	case Dict:
		d := newDict()
		for _, kv := range v {
			d.set(kv.Key, FromGo(kv.Value))
		}
		return d
	}
	return fmt.Sprint(x)
}

// Dict is an ordered mapping for FromGo, for data whose key order shows
// in the output (tojson).
type Dict []KV

// KV is one entry of a Dict.
type KV struct {
	Key   string
	Value any
}

func truthy(v value) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case *list:
		return len(x.items) > 0
	case *dict:
		return len(x.keys) > 0
	}
	return true
}

func typeName(v value) string {
	switch v.(type) {
	case nil:
		return "none"
	case undefined:
		return "undefined"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	case *list:
		return "list"
	case *dict:
		return "dict"
	case *namespace:
		return "namespace"
	}
	return "callable"
}

// str is Python's str() of v, as {{ v }} prints it.
func str(v value) string {
	switch x := v.(type) {
	case string:
		return x
	case undefined:
		return ""
	}
	var b strings.Builder
	repr(&b, v, false, 0)
	return b.String()
}

// repr writes Python's repr() of v (strings quoted) or, with top false
// inside str(), the same for containers. Containers nested deeper than
// maxDepth (a list that holds itself) print as "[...]", as Python does.
func repr(b *strings.Builder, v value, quote bool, depth int) {
	if depth > maxDepth {
		b.WriteString("[...]")
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case undefined:
		if quote {
			b.WriteString("None")
		}
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloat(x))
	case string:
		if quote {
			b.WriteString(pyQuote(x))
		} else {
			b.WriteString(x)
		}
	case *list:
		b.WriteByte('[')
		for i, e := range x.items {
			if i > 0 {
				b.WriteString(", ")
			}
			repr(b, e, true, depth+1)
		}
		b.WriteByte(']')
	case *dict:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyQuote(k) + ": ")
			repr(b, x.m[k], true, depth+1)
		}
		b.WriteByte('}')
	case *namespace:
		b.WriteString("<Namespace>")
	default:
		b.WriteString("<function>")
	}
}

// pyQuote quotes s as Python's repr does for simple strings.
func pyQuote(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, "\"") {
		q = "\""
	}
	r := strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r", "\t", "\\t", q, "\\"+q)
	return q + r.Replace(s) + q
}

// pyFloat formats f as Python's repr(float).
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if e := strings.IndexByte(s, 'e'); e >= 0 && len(s) > e+2 && s[e+1] == '-' && s[e+2] != '0' && len(s) == e+3 {
		s = s[:e+2] + "0" + s[e+2:]
	}
	return s
}

func toFloat(v value) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func toInt(v value) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// equal is Python's ==. Containers nested deeper than maxDepth compare
// unequal (a list holding itself would recurse for ever).
func equal(a, b value) bool { return equalDepth(a, b, 0) }

func equalDepth(a, b value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case string:
		y, ok := b.(string)
		return ok && x == y
	case *list:
		y, ok := b.(*list)
		if !ok || len(x.items) != len(y.items) {
			return false
		}
		for i := range x.items {
			if !equalDepth(x.items[i], y.items[i], depth+1) {
				return false
			}
		}
		return true
	case *dict:
		y, ok := b.(*dict)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		for _, k := range x.keys {
			w, ok := y.m[k]
			if !ok || !equalDepth(x.m[k], w, depth+1) {
				return false
			}
		}
		return true
	}
	return a == b
}

// less is Python's < for numbers and strings.
func less(a, b value) (bool, error) {
	if fa, ok := toFloat(a); ok {
		if fb, ok := toFloat(b); ok {
			return fa < fb, nil
		}
	}
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return sa < sb, nil
		}
	}
	return false, fmt.Errorf("cannot compare %s with %s", typeName(a), typeName(b))
}

// items lists what a for loop iterates over.
func iterate(v value) ([]value, error) {
	switch x := v.(type) {
	case *list:
		return x.items, nil
	case *dict:
		out := make([]value, len(x.keys))
		for i, k := range x.keys {
			out[i] = k
		}
		return out, nil
	case string:
		var out []value
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case nil:
		return nil, fmt.Errorf("cannot iterate over none")
	case undefined:
		return nil, nil // Jinja's undefined iterates as empty
	}
	return nil, fmt.Errorf("cannot iterate over %s", typeName(v))
}
