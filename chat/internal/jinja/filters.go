package jinja

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

func (r *renderer) filter(x filterExpr) (value, error) {
	v, err := r.eval(x.x)
	if err != nil {
		return nil, err
	}
	args, kw, err := r.evalArgs(x.args, x.kw)
	if err != nil {
		return nil, err
	}
	return r.applyFilter(x.name, v, args, kw)
}

// arg returns the i-th positional argument or the keyword name, or def.
func arg(args []value, kw map[string]value, i int, name string, def value) value {
	if i < len(args) {
		return args[i]
	}
	if v, ok := kw[name]; ok {
		return v
	}
	return def
}

func (r *renderer) applyFilter(name string, v value, args []value, kw map[string]value) (value, error) {
	switch name {
	case "length", "count":
		return length(v)
	case "trim":
		if c := arg(args, kw, 0, "chars", nil); c != nil {
			return strings.Trim(str(v), str(c)), nil
		}
		return strings.TrimSpace(str(v)), nil
	case "upper":
		return strings.ToUpper(str(v)), nil
	case "lower":
		return strings.ToLower(str(v)), nil
	case "title":
		return title(str(v)), nil
	case "capitalize":
		return capitalize(str(v)), nil
	case "string":
		return str(v), nil
	case "safe", "e", "escape", "forceescape":
		if name == "safe" {
			return v, nil
		}
		return html.EscapeString(str(v)), nil
	case "tojson":
		return r.toJSON(v, arg(args, kw, 0, "indent", nil))
	case "int":
		return toIntFilter(v, arg(args, kw, 0, "default", int64(0))), nil
	case "float":
		return toFloatFilter(v, arg(args, kw, 0, "default", 0.0)), nil
	case "abs":
		switch x := v.(type) {
		case int64:
			if x < 0 {
				return -x, nil
			}
			return x, nil
		case float64:
			return math.Abs(x), nil
		}
		return nil, fmt.Errorf("abs of %s", typeName(v))
	case "round":
		return round(v, arg(args, kw, 0, "precision", int64(0)), str(arg(args, kw, 1, "method", "common")))
	case "default", "d":
		_, undef := v.(undefined)
		if undef || (truthy(arg(args, kw, 1, "boolean", false)) && !truthy(v)) {
			return arg(args, kw, 0, "default_value", ""), nil
		}
		return v, nil
	case "join":
		items, err := r.attrItems(v, arg(args, kw, 1, "attribute", nil))
		if err != nil {
			return nil, err
		}
		return r.join(&list{items: items}, str(arg(args, kw, 0, "d", "")))
	case "replace":
		if len(args) < 2 {
			return nil, fmt.Errorf("replace needs 2 arguments")
		}
		return r.replace(str(v), str(args[0]), str(args[1]))
	case "indent":
		return indent(str(v), arg(args, kw, 0, "width", int64(4)), truthy(arg(args, kw, 1, "first", false)), truthy(arg(args, kw, 2, "blank", false)), r)
	case "format":
		return r.percentFormat(str(v), args)
	case "wordcount":
		return int64(len(strings.Fields(str(v)))), nil
	case "items":
		d, ok := v.(*dict)
		if !ok {
			return nil, fmt.Errorf("items of %s", typeName(v))
		}
		return dictMethod(d, "items").(builtin)(r, nil, nil)
	case "dictsort":
		return dictsort(v)
	}
	return r.seqFilter(name, v, args, kw)
}

// seqFilter is the filters over sequences.
func (r *renderer) seqFilter(name string, v value, args []value, kw map[string]value) (value, error) {
	if v == nil && knownSeqFilter[name] {
		v = undefined{} // Jinja's select/map/… treat a false sequence as empty
	}
	items, err := iterate(v)
	if err != nil {
		return nil, fmt.Errorf("filter %s: %w", name, err)
	}
	switch name {
	case "list":
		return &list{items: append([]value{}, items...)}, nil
	case "first", "last":
		if len(items) == 0 {
			return undefined{}, nil
		}
		if name == "first" {
			return items[0], nil
		}
		return items[len(items)-1], nil
	case "reverse":
		if s, ok := v.(string); ok {
			rs := []rune(s)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return string(rs), nil
		}
		out := make([]value, len(items))
		for i, it := range items {
			out[len(items)-1-i] = it
		}
		return &list{items: out}, nil
	case "unique":
		var out []value
		for _, it := range items {
			if ok, _ := contains(&list{items: out}, it); !ok {
				out = append(out, it)
			}
			if err := r.step(); err != nil {
				return nil, err
			}
		}
		return &list{items: out}, nil
	case "sort":
		return r.sortFilter(items, truthy(arg(args, kw, 0, "reverse", false)), arg(args, kw, 2, "attribute", nil))
	case "sum":
		return r.sum(items, arg(args, kw, 0, "attribute", nil), arg(args, kw, 1, "start", int64(0)))
	case "min", "max":
		return minMax(items, name == "max")
	case "map":
		return r.mapFilter(items, args, kw)
	case "select", "reject", "selectattr", "rejectattr":
		return r.selectFilter(name, items, args)
	}
	return nil, fmt.Errorf("unknown filter %q", name)
}

var knownSeqFilter = map[string]bool{"list": true, "first": true, "last": true, "reverse": true, "unique": true, "sort": true,
	"sum": true, "min": true, "max": true, "map": true, "select": true, "reject": true, "selectattr": true, "rejectattr": true}

func length(v value) (value, error) {
	switch x := v.(type) {
	case string:
		return int64(utf8.RuneCountInString(x)), nil
	case *list:
		return int64(len(x.items)), nil
	case *dict:
		return int64(len(x.keys)), nil
	case undefined:
		return int64(0), nil
	}
	return nil, fmt.Errorf("length of %s", typeName(v))
}

func toIntFilter(v, def value) value {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return def
		}
		return int64(x)
	case bool:
		i, _ := toInt(x)
		return i
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return int64(f)
		}
	}
	return def
}

func toFloatFilter(v, def value) value {
	if f, ok := toFloat(v); ok {
		return f
	}
	if s, ok := v.(string); ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return f
		}
	}
	return def
}

func round(v, prec value, method string) (value, error) {
	f, ok := toFloat(v)
	p, ok2 := toInt(prec)
	if !ok || !ok2 || p < 0 || p > 15 {
		return nil, fmt.Errorf("round of %s", typeName(v))
	}
	m := math.Pow(10, float64(p))
	switch method {
	case "floor":
		return math.Floor(f*m) / m, nil
	case "ceil":
		return math.Ceil(f*m) / m, nil
	}
	return math.RoundToEven(f*m) / m, nil
}

func indent(s string, width value, first, blank bool, r *renderer) (value, error) {
	pad := ""
	switch w := width.(type) {
	case string:
		pad = w
	default:
		n, ok := toInt(w)
		if !ok || n < 0 || n > 1000 {
			return nil, fmt.Errorf("indent width %s", str(width))
		}
		pad = strings.Repeat(" ", int(n))
	}
	lines := strings.Split(s, "\n")
	if err := r.grow(len(s) + len(lines)*len(pad)); err != nil {
		return nil, err
	}
	for i, l := range lines {
		if (i > 0 || first) && (blank || strings.TrimSpace(l) != "") {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n"), nil
}

func dictsort(v value) (value, error) {
	d, ok := v.(*dict)
	if !ok {
		return nil, fmt.Errorf("dictsort of %s", typeName(v))
	}
	keys := append([]string{}, d.keys...)
	sort.Slice(keys, func(i, j int) bool { return strings.ToLower(keys[i]) < strings.ToLower(keys[j]) })
	l := &list{}
	for _, k := range keys {
		l.items = append(l.items, &list{items: []value{k, d.m[k]}})
	}
	return l, nil
}

// attrItems is items, or each item's attribute (a dotted path) when attr
// is given.
func (r *renderer) attrItems(v, attrName value) ([]value, error) {
	items, err := iterate(v)
	if err != nil || attrName == nil {
		return items, err
	}
	out := make([]value, len(items))
	for i, it := range items {
		out[i] = attrPath(it, str(attrName))
	}
	return out, nil
}

func attrPath(v value, path string) value {
	for _, p := range strings.Split(path, ".") {
		if i, err := strconv.Atoi(p); err == nil {
			v = item(v, int64(i))
		} else {
			v = item(v, p)
		}
	}
	return v
}

func (r *renderer) sortFilter(items []value, reverse bool, attrName value) (value, error) {
	keyed := append([]value{}, items...)
	keys := keyed
	if attrName != nil {
		keys = make([]value, len(items))
		for i, it := range items {
			keys[i] = attrPath(it, str(attrName))
		}
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var err error
	sort.SliceStable(idx, func(a, b int) bool {
		ka, kb := keys[idx[a]], keys[idx[b]]
		if sa, ok := ka.(string); ok {
			if sb, ok := kb.(string); ok {
				ka, kb = strings.ToLower(sa), strings.ToLower(sb)
			}
		}
		if reverse {
			ka, kb = kb, ka
		}
		lt, e := less(ka, kb)
		if e != nil {
			err = e
		}
		return lt
	})
	if err != nil {
		return nil, err
	}
	out := make([]value, len(items))
	for i, j := range idx {
		out[i] = keyed[j]
	}
	return &list{items: out}, r.growItems(len(out))
}

func (r *renderer) sum(items []value, attrName, start value) (value, error) {
	total := start
	var err error
	for _, it := range items {
		if attrName != nil {
			it = attrPath(it, str(attrName))
		}
		if total, err = r.arith("+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func minMax(items []value, isMax bool) (value, error) {
	if len(items) == 0 {
		return undefined{}, nil
	}
	best := items[0]
	for _, it := range items[1:] {
		lt, err := less(it, best)
		if err != nil {
			return nil, err
		}
		if lt != isMax && !equal(it, best) {
			best = it
		}
	}
	return best, nil
}

func (r *renderer) mapFilter(items []value, args []value, kw map[string]value) (value, error) {
	out := make([]value, len(items))
	for i, it := range items {
		if a, ok := kw["attribute"]; ok {
			v := attrPath(it, str(a))
			if _, undef := v.(undefined); undef {
				if d, ok := kw["default"]; ok {
					v = d
				}
			}
			out[i] = v
			continue
		}
		if len(args) == 0 {
			return nil, fmt.Errorf("map needs a filter name or attribute=")
		}
		v, err := r.applyFilter(str(args[0]), it, args[1:], nil)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return &list{items: out}, nil
}

func (r *renderer) selectFilter(name string, items []value, args []value) (value, error) {
	byAttr := strings.HasSuffix(name, "attr")
	keep := strings.HasPrefix(name, "select")
	var out []value
	for _, it := range items {
		v, rest := it, args
		if byAttr {
			if len(args) == 0 {
				return nil, fmt.Errorf("%s needs an attribute", name)
			}
			v, rest = attrPath(it, str(args[0])), args[1:]
		}
		ok := truthy(v)
		if len(rest) > 0 {
			var err error
			if ok, err = r.runTest(str(rest[0]), v, rest[1:]); err != nil {
				return nil, err
			}
		}
		if ok == keep {
			out = append(out, it)
		}
	}
	return &list{items: out}, nil
}

func (r *renderer) test(x testExpr) (value, error) {
	v, err := r.eval(x.x)
	if err != nil {
		return nil, err
	}
	args, _, err := r.evalArgs(x.args, nil)
	if err != nil {
		return nil, err
	}
	ok, err := r.runTest(x.name, v, args)
	return ok != x.negate, err
}

func (r *renderer) runTest(name string, v value, args []value) (bool, error) {
	a := func() (value, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("test %s needs an argument", name)
		}
		return args[0], nil
	}
	switch name {
	case "defined":
		_, u := v.(undefined)
		return !u, nil
	case "undefined":
		_, u := v.(undefined)
		return u, nil
	case "none":
		return v == nil, nil
	case "boolean":
		_, ok := v.(bool)
		return ok, nil
	case "true", "false":
		b, ok := v.(bool)
		return ok && b == (name == "true"), nil
	case "string":
		_, ok := v.(string)
		return ok, nil
	case "number":
		switch v.(type) {
		case int64, float64:
			return true, nil
		}
		return false, nil
	case "integer":
		_, ok := v.(int64)
		return ok, nil
	case "float":
		_, ok := v.(float64)
		return ok, nil
	case "mapping":
		_, ok := v.(*dict)
		return ok, nil
	case "iterable", "sequence":
		switch v.(type) {
		case string, *list, *dict:
			return true, nil
		}
		return false, nil
	case "callable":
		switch v.(type) {
		case builtin, *macro:
			return true, nil
		}
		return false, nil
	case "odd", "even", "divisibleby":
		n, ok := toInt(v)
		if !ok {
			return false, fmt.Errorf("test %s of %s", name, typeName(v))
		}
		switch name {
		case "odd":
			return n%2 != 0, nil
		case "even":
			return n%2 == 0, nil
		}
		d, err := a()
		if err != nil {
			return false, err
		}
		m, ok := toInt(d)
		if !ok || m == 0 {
			return false, fmt.Errorf("divisibleby needs a non-zero integer")
		}
		return n%m == 0, nil
	case "lower", "upper":
		s, ok := v.(string)
		return ok && isClass(s, "is"+name), nil
	case "equalto", "eq", "==", "sameas":
		b, err := a()
		return err == nil && equal(v, b), err
	case "ne", "!=":
		b, err := a()
		return err == nil && !equal(v, b), err
	case "lt", "<", "gt", ">", "le", "<=", "ge", ">=", "in":
		b, err := a()
		if err != nil {
			return false, err
		}
		op := map[string]string{"lt": "<", "gt": ">", "le": "<=", "ge": ">="}[name]
		if op == "" {
			op = name
		}
		res, err := r.apply(op, v, b)
		return truthy(res), err
	}
	return false, fmt.Errorf("unknown test %q", name)
}
