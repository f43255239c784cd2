package jinja

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Limits bound one rendering. Zero fields take the defaults.
type Limits struct {
	Steps  int           // evaluation steps (default 10 000 000)
	Output int           // bytes of output, and of any one value built (default 16 MiB)
	Depth  int           // nesting of macro calls (default 50)
	Time   time.Duration // wall-clock time (default 5 s)
}

func (l Limits) withDefaults() Limits {
	if l.Steps <= 0 {
		l.Steps = 10_000_000
	}
	if l.Output <= 0 {
		l.Output = 16 << 20
	}
	if l.Depth <= 0 {
		l.Depth = 50
	}
	if l.Time <= 0 {
		l.Time = 5 * time.Second
	}
	return l
}

// ErrLimit is wrapped by the errors of a rendering that went past its
// Limits.
var ErrLimit = errors.New("template exceeded its limits")

// Template is a parsed template. It is immutable and safe for concurrent
// use.
type Template struct{ root []node }

// Parse parses src. Errors name the line.
func Parse(src string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil { // a bug of ours must not take the caller down
			t, err = nil, fmt.Errorf("jinja: internal error parsing the template: %v", r)
		}
	}()
	root, err := parseTemplate(src)
	if err != nil {
		return nil, err
	}
	return &Template{root: root}, nil
}

// Render runs the template with vars (converted by FromGo) and globals
// (Go functions: see Func).
func (t *Template) Render(vars map[string]any, lim Limits) (out string, err error) {
	r := &renderer{lim: lim.withDefaults(), out: &strings.Builder{}}
	r.deadline = time.Now().Add(r.lim.Time)
	r.scopes = []map[string]value{globals(), {}}
	for k, v := range vars {
		if f, ok := v.(Func); ok {
			r.scopes[1][k] = builtin(func(r *renderer, args []value, _ map[string]value) (value, error) {
				s := make([]any, len(args))
				for i, a := range args {
					s[i] = a
				}
				res, err := f(s)
				return FromGo(res), err
			})
			continue
		}
		r.scopes[1][k] = FromGo(v)
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("jinja: internal error rendering the template: %v", p)
		}
	}()
	if err := r.exec(t.root); err != nil && !errors.Is(err, errBreak) && !errors.Is(err, errContinue) {
		return "", err
	}
	return r.out.String(), nil
}

// Func is a Go function callable from a template; it receives the
// arguments as template values (strings, int64, float64, bool, nil, …).
type Func func(args []any) (any, error)

type renderer struct {
	lim      Limits
	deadline time.Time
	steps    int
	depth    int
	out      *strings.Builder
	scopes   []map[string]value
}

var (
	errBreak    = errors.New("break outside a loop")
	errContinue = errors.New("continue outside a loop")
)

// step counts one unit of work and checks the budgets.
func (r *renderer) step() error {
	r.steps++
	if r.steps > r.lim.Steps {
		return fmt.Errorf("%w: more than %d steps", ErrLimit, r.lim.Steps)
	}
	if r.steps&1023 == 0 && time.Now().After(r.deadline) {
		return fmt.Errorf("%w: rendering took longer than %v", ErrLimit, r.lim.Time)
	}
	return nil
}

// grow checks that a value of n bytes may be built, and charges the
// copying it costs to the step budget (one step per 64 bytes), so that a
// template repeating large copies runs out of steps, not of time.
func (r *renderer) grow(n int) error {
	if n > r.lim.Output || n < 0 {
		return fmt.Errorf("%w: a value of %d bytes is over %d", ErrLimit, n, r.lim.Output)
	}
	r.steps += n >> 6
	if n > 1<<16 && time.Now().After(r.deadline) {
		return fmt.Errorf("%w: rendering took longer than %v", ErrLimit, r.lim.Time)
	}
	return r.step()
}

// growItems is grow for a list of n values (each a 16-byte interface, at
// least).
func (r *renderer) growItems(n int) error {
	if n > r.lim.Output/16 || n < 0 {
		return fmt.Errorf("%w: a list of %d items is over %d bytes", ErrLimit, n, r.lim.Output)
	}
	return r.grow(n * 16)
}

func (r *renderer) write(s string) error {
	if r.out.Len()+len(s) > r.lim.Output {
		return fmt.Errorf("%w: output over %d bytes", ErrLimit, r.lim.Output)
	}
	r.out.WriteString(s)
	return nil
}

func (r *renderer) lookup(name string) value {
	for i := len(r.scopes) - 1; i >= 0; i-- {
		if v, ok := r.scopes[i][name]; ok {
			return v
		}
	}
	return undefined{name}
}

func (r *renderer) push() { r.scopes = append(r.scopes, map[string]value{}) }
func (r *renderer) pop()  { r.scopes = r.scopes[:len(r.scopes)-1] }

func (r *renderer) exec(nodes []node) error {
	for _, n := range nodes {
		if err := r.step(); err != nil {
			return err
		}
		if err := r.execOne(n); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) execOne(n node) error {
	switch n := n.(type) {
	case textNode:
		return r.write(n.s)
	case outputNode:
		v, err := r.eval(n.x)
		if err != nil {
			return err
		}
		return r.write(str(v))
	case ifNode:
		for i, c := range n.conds {
			v, err := r.eval(c)
			if err != nil {
				return err
			}
			if truthy(v) {
				return r.exec(n.bodies[i])
			}
		}
		return r.exec(n.els)
	case forNode:
		return r.forLoop(n)
	case setNode:
		return r.set(n)
	case macroNode:
		r.scopes[len(r.scopes)-1][n.name] = &macro{n}
		return nil
	case filterBlock:
		text, err := r.capture(n.body)
		if err != nil {
			return err
		}
		args, kw, err := r.evalArgs(n.f.args, n.f.kw)
		if err != nil {
			return err
		}
		v, err := r.applyFilter(n.f.name, text, args, kw)
		if err != nil {
			return err
		}
		return r.write(str(v))
	case loopControl:
		if n.brk {
			return errBreak
		}
		return errContinue
	}
	return fmt.Errorf("jinja: unknown node %T", n)
}

func (r *renderer) set(n setNode) error {
	var v value
	var err error
	if n.value != nil {
		v, err = r.eval(n.value)
	} else {
		v, err = r.capture(n.body)
	}
	if err != nil {
		return err
	}
	top := r.scopes[len(r.scopes)-1]
	switch {
	case n.attr != "":
		ns, ok := r.lookup(n.vars[0]).(*namespace)
		if !ok {
			return fmt.Errorf("cannot set %s.%s: %s is not a namespace", n.vars[0], n.attr, n.vars[0])
		}
		ns.d.set(n.attr, v)
	case len(n.vars) == 1:
		top[n.vars[0]] = v
	default:
		items, err := iterate(v)
		if err != nil || len(items) != len(n.vars) {
			return fmt.Errorf("cannot unpack %s into %d names", typeName(v), len(n.vars))
		}
		for i, name := range n.vars {
			top[name] = items[i]
		}
	}
	return nil
}

// capture renders body into a string (a block set, a macro call).
func (r *renderer) capture(body []node) (value, error) {
	saved := r.out
	r.out = &strings.Builder{}
	err := r.exec(body)
	s := r.out.String()
	r.out = saved
	if err != nil {
		return nil, err
	}
	if r.out.Len()+len(s) > r.lim.Output {
		return nil, fmt.Errorf("%w: output over %d bytes", ErrLimit, r.lim.Output)
	}
	return s, nil
}

func (r *renderer) forLoop(n forNode) error {
	seq, err := r.eval(n.iter)
	if err != nil {
		return err
	}
	all, err := iterate(seq)
	if err != nil {
		return err
	}
	r.push()
	defer r.pop()
	items := all
	if n.cond != nil {
		items = nil
		for _, it := range all {
			if err := r.step(); err != nil {
				return err
			}
			if err := r.bind(n.vars, it); err != nil {
				return err
			}
			v, err := r.eval(n.cond)
			if err != nil {
				return err
			}
			if truthy(v) {
				items = append(items, it)
			}
		}
	}
	if len(items) == 0 {
		return r.exec(n.els)
	}
	for i, it := range items {
		// Each iteration is a step, so loops with empty bodies are
		// bounded by Steps too, not only by the clock.
		if err := r.step(); err != nil {
			return err
		}
		if err := r.bind(n.vars, it); err != nil {
			return err
		}
		r.scopes[len(r.scopes)-1]["loop"] = loopValue(items, i)
		err := r.exec(n.body)
		if errors.Is(err, errBreak) {
			break
		}
		if err != nil && !errors.Is(err, errContinue) {
			return err
		}
	}
	return nil
}

// bind sets the loop variables to an item (unpacking pairs).
func (r *renderer) bind(vars []string, it value) error {
	top := r.scopes[len(r.scopes)-1]
	if len(vars) == 1 {
		top[vars[0]] = it
		return nil
	}
	parts, err := iterate(it)
	if err != nil || len(parts) != len(vars) {
		return fmt.Errorf("cannot unpack %s into %d loop variables", typeName(it), len(vars))
	}
	for i, v := range vars {
		top[v] = parts[i]
	}
	return nil
}

func loopValue(items []value, i int) *dict {
	d := newDict()
	n := int64(len(items))
	d.set("index", int64(i+1))
	d.set("index0", int64(i))
	d.set("revindex", n-int64(i))
	d.set("revindex0", n-int64(i)-1)
	d.set("first", i == 0)
	d.set("last", i == len(items)-1)
	d.set("length", n)
	var prev, next value = undefined{}, undefined{}
	if i > 0 {
		prev = items[i-1]
	}
	if i+1 < len(items) {
		next = items[i+1]
	}
	d.set("previtem", prev)
	d.set("nextitem", next)
	d.set("cycle", builtin(func(_ *renderer, args []value, _ map[string]value) (value, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("loop.cycle needs arguments")
		}
		return args[i%len(args)], nil
	}))
	return d
}

// macro is a callable {% macro %}.
type macro struct{ n macroNode }

func (r *renderer) callMacro(m *macro, args []value, kw map[string]value) (value, error) {
	if r.depth >= r.lim.Depth {
		return nil, fmt.Errorf("%w: macro calls nested deeper than %d", ErrLimit, r.lim.Depth)
	}
	r.depth++
	defer func() { r.depth-- }()
	saved := r.scopes
	r.scopes = append([]map[string]value{}, saved[0], saved[1], map[string]value{})
	defer func() { r.scopes = saved }()
	top := r.scopes[2]
	for i, p := range m.n.params {
		switch v, ok := kw[p.name]; {
		case i < len(args):
			top[p.name] = args[i]
		case ok:
			top[p.name] = v
		case p.def != nil:
			d, err := r.eval(p.def)
			if err != nil {
				return nil, err
			}
			top[p.name] = d
		default:
			top[p.name] = undefined{p.name}
		}
	}
	return r.capture(m.n.body)
}

func (r *renderer) eval(x expr) (value, error) {
	if err := r.step(); err != nil {
		return nil, err
	}
	switch x := x.(type) {
	case literal:
		return x.v, nil
	case nameRef:
		return r.lookup(x.name), nil
	case listLit:
		l := &list{}
		for _, e := range x.items {
			v, err := r.eval(e)
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, v)
		}
		return l, nil
	case dictLit:
		d := newDict()
		for i := range x.keys {
			k, err := r.eval(x.keys[i])
			if err != nil {
				return nil, err
			}
			v, err := r.eval(x.vals[i])
			if err != nil {
				return nil, err
			}
			d.set(str(k), v)
		}
		return d, nil
	case getAttr:
		v, err := r.eval(x.x)
		if err != nil {
			return nil, err
		}
		return attr(v, x.name), nil
	case getItem:
		v, err := r.eval(x.x)
		if err != nil {
			return nil, err
		}
		k, err := r.eval(x.key)
		if err != nil {
			return nil, err
		}
		return item(v, k), nil
	case sliceExpr:
		return r.slice(x)
	case callExpr:
		return r.call(x)
	case filterExpr:
		return r.filter(x)
	case testExpr:
		return r.test(x)
	case unaryExpr:
		v, err := r.eval(x.x)
		if err != nil {
			return nil, err
		}
		return unary(x.op, v)
	case binaryExpr:
		return r.binary(x)
	case condExpr:
		c, err := r.eval(x.cond)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return r.eval(x.a)
		}
		return r.eval(x.b)
	}
	return nil, fmt.Errorf("jinja: unknown expression %T", x)
}

// attr is v.name: a dict's key, a namespace's attribute, a loop field,
// or a method (see methods).
func attr(v value, name string) value {
	switch x := v.(type) {
	case *dict:
		if e, ok := x.get(name); ok {
			return e
		}
	case *namespace:
		if e, ok := x.d.get(name); ok {
			return e
		}
		return undefined{name}
	}
	if m := method(v, name); m != nil {
		return m
	}
	return undefined{name}
}

// item is v[k]: a dict's key, a list's or string's index (negative from
// the end), else undefined.
func item(v, k value) value {
	switch x := v.(type) {
	case *dict:
		if e, ok := x.get(str(k)); ok {
			return e
		}
		return undefined{str(k)}
	case *namespace:
		return attr(x, str(k))
	case *list:
		if i, ok := toInt(k); ok {
			if i < 0 {
				i += int64(len(x.items))
			}
			if i >= 0 && i < int64(len(x.items)) {
				return x.items[i]
			}
		}
	case string:
		if i, ok := toInt(k); ok {
			rs := []rune(x)
			if i < 0 {
				i += int64(len(rs))
			}
			if i >= 0 && i < int64(len(rs)) {
				return string(rs[i])
			}
		}
	}
	if s, ok := k.(string); ok {
		return attr(v, s)
	}
	return undefined{}
}

func (r *renderer) slice(x sliceExpr) (value, error) {
	v, err := r.eval(x.x)
	if err != nil {
		return nil, err
	}
	var bounds [3]value
	for i, e := range []expr{x.lo, x.hi, x.step} {
		if e == nil {
			continue
		}
		if bounds[i], err = r.eval(e); err != nil {
			return nil, err
		}
	}
	var seq []value
	var rs []rune
	switch s := v.(type) {
	case *list:
		seq = s.items
	case string:
		rs = []rune(s)
		seq = make([]value, len(rs))
	default:
		return nil, fmt.Errorf("cannot slice %s", typeName(v))
	}
	idx, err := sliceIndices(len(seq), bounds)
	if err != nil {
		return nil, err
	}
	if rs != nil || v == "" {
		out := make([]rune, 0, len(idx))
		for _, i := range idx {
			out = append(out, rs[i])
		}
		return string(out), nil
	}
	l := &list{items: make([]value, 0, len(idx))}
	for _, i := range idx {
		l.items = append(l.items, seq[i])
	}
	return l, nil
}

// sliceIndices are the indices Python's seq[lo:hi:step] picks.
func sliceIndices(n int, b [3]value) ([]int, error) {
	get := func(v value, def int64) (int64, error) {
		switch v.(type) {
		case nil, undefined:
			return def, nil
		}
		i, ok := toInt(v)
		if !ok {
			return 0, fmt.Errorf("slice indices must be integers, not %s", typeName(v))
		}
		return i, nil
	}
	step, err := get(b[2], 1)
	if err != nil || step == 0 {
		return nil, errors.Join(err, fmt.Errorf("slice step cannot be zero"))
	}
	clamp := func(i, lo, hi int64) int64 { return max(lo, min(hi, i)) }
	norm := func(i int64, lo, hi int64) int64 {
		if i < 0 {
			i += int64(n)
		}
		return clamp(i, lo, hi)
	}
	var lo, hi int64
	if step > 0 {
		if lo, err = get(b[0], 0); err == nil {
			hi, err = get(b[1], int64(n))
		}
		lo, hi = norm(lo, 0, int64(n)), norm(hi, 0, int64(n))
	} else {
		if lo, err = get(b[0], int64(n)-1); err == nil {
			hi, err = get(b[1], math.MinInt32)
		}
		lo = norm(lo, -1, int64(n)-1)
		if hi != math.MinInt32 {
			hi = norm(hi, -1, int64(n)-1)
		} else {
			hi = -1
		}
	}
	if err != nil {
		return nil, err
	}
	var out []int
	for i := lo; (step > 0 && i < hi) || (step < 0 && i > hi); i += step {
		out = append(out, int(i))
	}
	return out, nil
}

func unary(op string, v value) (value, error) {
	switch op {
	case "not":
		return !truthy(v), nil
	case "-":
		switch x := v.(type) {
		case int64:
			return -x, nil
		case float64:
			return -x, nil
		}
	case "+":
		switch v.(type) {
		case int64, float64:
			return v, nil
		}
	}
	return nil, fmt.Errorf("bad operand %s for unary %s", typeName(v), op)
}

func (r *renderer) binary(x binaryExpr) (value, error) {
	l, err := r.eval(x.l)
	if err != nil {
		return nil, err
	}
	switch x.op { // short-circuit, returning the deciding operand as Python does
	case "and":
		if !truthy(l) {
			return l, nil
		}
		return r.eval(x.r)
	case "or":
		if truthy(l) {
			return l, nil
		}
		return r.eval(x.r)
	}
	rv, err := r.eval(x.r)
	if err != nil {
		return nil, err
	}
	return r.apply(x.op, l, rv)
}

func (r *renderer) apply(op string, l, rv value) (value, error) {
	switch op {
	case "==":
		return equal(l, rv), nil
	case "!=":
		return !equal(l, rv), nil
	case "<":
		return less(l, rv)
	case ">":
		return less(rv, l)
	case "<=":
		b, err := less(rv, l)
		return !b, err
	case ">=":
		b, err := less(l, rv)
		return !b, err
	case "in", "not in":
		b, err := contains(rv, l)
		return b != (op == "not in"), err
	case "~":
		s := str(l) + str(rv)
		return s, r.grow(len(s))
	}
	return r.arith(op, l, rv)
}

// contains is Python's "needle in hay".
func contains(hay, needle value) (bool, error) {
	switch h := hay.(type) {
	case string:
		n, ok := needle.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' needs a string, not %s", typeName(needle))
		}
		return strings.Contains(h, n), nil
	case *list:
		for _, e := range h.items {
			if equal(e, needle) {
				return true, nil
			}
		}
		return false, nil
	case *dict:
		_, ok := h.get(str(needle))
		return ok, nil
	case undefined, nil:
		return false, nil
	}
	return false, fmt.Errorf("'in' needs a container, not %s", typeName(hay))
}

func (r *renderer) arith(op string, l, rv value) (value, error) {
	if op == "+" {
		switch a := l.(type) {
		case string:
			if b, ok := rv.(string); ok {
				return a + b, r.grow(len(a) + len(b))
			}
		case *list:
			if b, ok := rv.(*list); ok {
				if err := r.growItems(len(a.items) + len(b.items)); err != nil {
					return nil, err
				}
				return &list{items: append(append([]value{}, a.items...), b.items...)}, nil
			}
		}
	}
	if f, ok := l.(string); ok && op == "%" {
		args := []value{rv}
		if t, ok := rv.(*list); ok {
			args = t.items
		}
		return r.percentFormat(f, args)
	}
	if op == "*" {
		if v, ok, err := r.repeat(l, rv); ok {
			return v, err
		}
		if v, ok, err := r.repeat(rv, l); ok {
			return v, err
		}
	}
	ai, aInt := l.(int64)
	bi, bInt := rv.(int64)
	if aInt && bInt {
		return intOp(op, ai, bi)
	}
	a, ok1 := toFloat(l)
	b, ok2 := toFloat(rv)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("unsupported operand types for %s: %s and %s", op, typeName(l), typeName(rv))
	}
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/", "//", "%":
		if b == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		switch op {
		case "/":
			return a / b, nil
		case "//":
			return math.Floor(a / b), nil
		}
		return a - b*math.Floor(a/b), nil
	case "**":
		return math.Pow(a, b), nil
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

func intOp(op string, a, b int64) (value, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return float64(a) / float64(b), nil
	case "//", "%":
		if b == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		q := a / b
		if (a%b != 0) && ((a < 0) != (b < 0)) {
			q-- // Python floors
		}
		if op == "//" {
			return q, nil
		}
		return a - q*b, nil
	case "**":
		return intPow(a, b), nil
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

// repeat is "s" * n and [x] * n, bounded.
func (r *renderer) repeat(seq, n value) (value, bool, error) {
	k, ok := n.(int64)
	if !ok {
		return nil, false, nil
	}
	k = max(k, 0)
	switch s := seq.(type) {
	case string:
		if len(s) > 0 && k > int64(r.lim.Output/len(s)) {
			return nil, true, r.grow(r.lim.Output + 1)
		}
		return strings.Repeat(s, int(k)), true, r.grow(len(s) * int(k))
	case *list:
		if len(s.items) > 0 && k > int64(r.lim.Output/len(s.items)) {
			return nil, true, r.growItems(r.lim.Output + 1)
		}
		if err := r.growItems(len(s.items) * int(k)); err != nil {
			return nil, true, err
		}
		out := &list{}
		for i := int64(0); i < k; i++ {
			out.items = append(out.items, s.items...)
		}
		return out, true, nil
	}
	return nil, false, nil
}

func (r *renderer) evalArgs(args []expr, kws []kwArg) ([]value, map[string]value, error) {
	vals := make([]value, len(args))
	for i, a := range args {
		v, err := r.eval(a)
		if err != nil {
			return nil, nil, err
		}
		vals[i] = v
	}
	var kw map[string]value
	if len(kws) > 0 {
		kw = map[string]value{}
		for _, k := range kws {
			v, err := r.eval(k.x)
			if err != nil {
				return nil, nil, err
			}
			kw[k.name] = v
		}
	}
	return vals, kw, nil
}

func (r *renderer) call(x callExpr) (value, error) {
	fn, err := r.eval(x.fn)
	if err != nil {
		return nil, err
	}
	args, kw, err := r.evalArgs(x.args, x.kw)
	if err != nil {
		return nil, err
	}
	switch f := fn.(type) {
	case builtin:
		return f(r, args, kw)
	case *macro:
		return r.callMacro(f, args, kw)
	case undefined:
		if f.name != "" {
			return nil, fmt.Errorf("%s is undefined and cannot be called", f.name)
		}
	}
	return nil, fmt.Errorf("%s is not callable", typeName(fn))
}

// intPow is a**b: an int while it fits, else a float (Python's ints
// would grow; a template has no use for such numbers).
func intPow(a, b int64) value {
	switch {
	case b < 0:
		return math.Pow(float64(a), float64(b))
	case a == 0 || a == 1:
		return a
	case a == -1:
		return 1 - 2*(b&1)
	}
	p := int64(1)
	for i := int64(0); i < b; i++ { // |a| ≥ 2: at most 63 rounds before overflow
		next := p * a
		if next/a != p {
			return math.Pow(float64(a), float64(b))
		}
		p = next
	}
	return p
}
