package jinja

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

func globals() map[string]value {
	return map[string]value{
		"range":     builtin(rangeFn),
		"namespace": builtin(namespaceFn),
		"dict":      builtin(dictFn),
		"raise_exception": builtin(func(_ *renderer, args []value, _ map[string]value) (value, error) {
			msg := "raise_exception called"
			if len(args) > 0 {
				msg = str(args[0])
			}
			return nil, &RaisedError{msg}
		}),
	}
}

// RaisedError is the error of a template's raise_exception(message).
type RaisedError struct{ Message string }

func (e *RaisedError) Error() string { return "template raised: " + e.Message }

func rangeFn(r *renderer, args []value, _ map[string]value) (value, error) {
	var b [3]int64
	b[2] = 1
	for i, a := range args {
		n, ok := toInt(a)
		if !ok || i > 2 {
			return nil, fmt.Errorf("range takes up to 3 integers")
		}
		b[i] = n
	}
	lo, hi, step := b[0], b[1], b[2]
	switch len(args) {
	case 0:
		return nil, fmt.Errorf("range needs an argument")
	case 1:
		lo, hi = 0, b[0]
	}
	if step == 0 {
		return nil, fmt.Errorf("range step cannot be zero")
	}
	n := int64(0)
	if step > 0 && hi > lo {
		n = (hi - lo + step - 1) / step
	} else if step < 0 && lo > hi {
		n = (lo - hi - step - 1) / -step
	}
	if n > int64(r.lim.Output) {
		return nil, r.growItems(r.lim.Output + 1)
	}
	if err := r.growItems(int(n)); err != nil {
		return nil, err
	}
	l := &list{items: make([]value, n)}
	for i := range l.items {
		l.items[i] = lo + int64(i)*step
	}
	return l, nil
}

func namespaceFn(_ *renderer, args []value, kw map[string]value) (value, error) {
	d := newDict()
	for _, a := range args {
		if src, ok := a.(*dict); ok {
			for _, k := range src.keys {
				d.set(k, src.m[k])
			}
		}
	}
	for _, k := range sortedKeys(kw) {
		d.set(k, kw[k])
	}
	return &namespace{d}, nil
}

func dictFn(_ *renderer, args []value, kw map[string]value) (value, error) {
	d := newDict()
	for _, k := range sortedKeys(kw) {
		d.set(k, kw[k])
	}
	return d, nil
}

func sortedKeys(m map[string]value) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// method returns v's Python method called name, or nil.
func method(v value, name string) value {
	switch x := v.(type) {
	case string:
		if f := stringMethod(x, name); f != nil {
			return builtin(f)
		}
	case *dict:
		return dictMethod(x, name)
	case *list:
		return listMethod(x, name)
	}
	return nil
}

func stringMethod(s, name string) func(*renderer, []value, map[string]value) (value, error) {
	arg := func(args []value, i int, def string) string {
		if i < len(args) && args[i] != nil {
			return str(args[i])
		}
		return def
	}
	strip := func(f func(string, string) string, g func(string) string) func(*renderer, []value, map[string]value) (value, error) {
		return func(_ *renderer, args []value, _ map[string]value) (value, error) {
			if len(args) > 0 && args[0] != nil {
				return f(s, str(args[0])), nil
			}
			return g(s), nil
		}
	}
	pure := func(f func(string) string) func(*renderer, []value, map[string]value) (value, error) {
		return func(*renderer, []value, map[string]value) (value, error) { return f(s), nil }
	}
	switch name {
	case "strip":
		return strip(strings.Trim, strings.TrimSpace)
	case "lstrip":
		return strip(strings.TrimLeft, func(s string) string { return strings.TrimLeftFunc(s, unicode.IsSpace) })
	case "rstrip":
		return strip(strings.TrimRight, func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) })
	case "upper":
		return pure(strings.ToUpper)
	case "lower":
		return pure(strings.ToLower)
	case "title":
		return pure(title)
	case "capitalize":
		return pure(capitalize)
	case "startswith", "endswith":
		return func(_ *renderer, args []value, _ map[string]value) (value, error) {
			pre := []value{arg(args, 0, "")}
			if len(args) > 0 {
				if l, ok := args[0].(*list); ok {
					pre = l.items
				}
			}
			for _, p := range pre {
				if (name == "startswith" && strings.HasPrefix(s, str(p))) || (name == "endswith" && strings.HasSuffix(s, str(p))) {
					return true, nil
				}
			}
			return false, nil
		}
	case "split":
		return func(r *renderer, args []value, _ map[string]value) (value, error) {
			var parts []string
			if sep := arg(args, 0, ""); sep != "" {
				parts = strings.Split(s, sep)
			} else {
				parts = strings.Fields(s)
			}
			if err := r.growItems(len(parts)); err != nil {
				return nil, err
			}
			return FromGo(parts), nil
		}
	case "replace":
		return func(r *renderer, args []value, _ map[string]value) (value, error) {
			if len(args) < 2 {
				return nil, fmt.Errorf("replace needs 2 arguments")
			}
			return r.replace(s, str(args[0]), str(args[1]))
		}
	case "format":
		return func(r *renderer, args []value, kw map[string]value) (value, error) { return r.braceFormat(s, args, kw) }
	case "find":
		return func(_ *renderer, args []value, _ map[string]value) (value, error) {
			return int64(strings.Index(s, arg(args, 0, ""))), nil
		}
	case "count":
		return func(_ *renderer, args []value, _ map[string]value) (value, error) {
			return int64(strings.Count(s, arg(args, 0, ""))), nil
		}
	case "join":
		return func(r *renderer, args []value, _ map[string]value) (value, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("join needs an argument")
			}
			return r.join(args[0], s)
		}
	case "isdigit", "isalpha", "isspace", "isupper", "islower":
		return func(*renderer, []value, map[string]value) (value, error) { return isClass(s, name), nil }
	}
	return nil
}

func isClass(s, name string) bool {
	if s == "" {
		return false
	}
	cased := false
	for _, r := range s {
		var ok bool
		switch name {
		case "isdigit":
			ok = unicode.IsDigit(r)
		case "isalpha":
			ok = unicode.IsLetter(r)
		case "isspace":
			ok = unicode.IsSpace(r)
		case "isupper":
			ok, cased = !unicode.IsLower(r), cased || unicode.IsUpper(r)
		case "islower":
			ok, cased = !unicode.IsUpper(r), cased || unicode.IsLower(r)
		}
		if !ok {
			return false
		}
	}
	return cased || (name != "isupper" && name != "islower")
}

func (r *renderer) replace(s, old, new string) (value, error) {
	n := strings.Count(s, old)
	if old == "" {
		n = len(s) + 1
	}
	if err := r.grow(len(s) + n*(len(new)-len(old))); err != nil {
		return nil, err
	}
	return strings.ReplaceAll(s, old, new), nil
}

func title(s string) string {
	var b strings.Builder
	prev := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			if prev {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToUpper(r))
			}
			prev = true
		} else {
			b.WriteRune(r)
			prev = false
		}
	}
	return b.String()
}

func capitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + strings.ToLower(s[i+len(string(r)):])
	}
	return s
}

func dictMethod(d *dict, name string) value {
	switch name {
	case "items", "keys", "values":
		return builtin(func(r *renderer, _ []value, _ map[string]value) (value, error) {
			l := &list{items: make([]value, len(d.keys))}
			for i, k := range d.keys {
				switch name {
				case "items":
					l.items[i] = &list{items: []value{k, d.m[k]}}
				case "keys":
					l.items[i] = k
				default:
					l.items[i] = d.m[k]
				}
			}
			return l, r.growItems(len(l.items))
		})
	case "get":
		return builtin(func(_ *renderer, args []value, _ map[string]value) (value, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("get needs a key")
			}
			if v, ok := d.get(str(args[0])); ok {
				return v, nil
			}
			if len(args) > 1 {
				return args[1], nil
			}
			return nil, nil
		})
	}
	return nil
}

func listMethod(l *list, name string) value {
	switch name {
	case "append":
		return builtin(func(r *renderer, args []value, _ map[string]value) (value, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("append takes one argument")
			}
			if err := r.growItems(len(l.items) + 1); err != nil {
				return nil, err
			}
			l.items = append(l.items, args[0])
			return nil, nil
		})
	case "pop":
		return builtin(func(_ *renderer, args []value, _ map[string]value) (value, error) {
			if len(l.items) == 0 {
				return nil, fmt.Errorf("pop from an empty list")
			}
			i := int64(len(l.items) - 1)
			if len(args) > 0 {
				i, _ = toInt(args[0])
				if i < 0 {
					i += int64(len(l.items))
				}
				if i < 0 || i >= int64(len(l.items)) {
					return nil, fmt.Errorf("pop index out of range")
				}
			}
			v := l.items[i]
			l.items = append(l.items[:i:i], l.items[i+1:]...)
			return v, nil
		})
	}
	return nil
}

func (r *renderer) join(seq value, sep string) (value, error) {
	items, err := iterate(seq)
	if err != nil {
		return nil, err
	}
	parts := make([]string, len(items))
	n := 0
	for i, it := range items {
		parts[i] = str(it)
		n += len(parts[i]) + len(sep)
		if err := r.grow(n); err != nil {
			return nil, err
		}
	}
	return strings.Join(parts, sep), nil
}
