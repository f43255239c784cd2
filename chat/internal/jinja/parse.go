package jinja

import (
	"fmt"
	"strings"
)

// Nodes of a parsed template.
type (
	node any

	textNode   struct{ s string }
	outputNode struct{ x expr }
	ifNode     struct {
		conds  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		vars      []string
		iter      expr
		cond      expr // the "for x in y if cond" filter, or nil
		body, els []node
	}
	setNode struct {
		vars  []string // one name, or a tuple's names
		attr  string   // "ns.attr": vars[0] is the namespace
		value expr     // nil for a block set
		body  []node
	}
	macroNode struct {
		name   string
		params []param
		body   []node
	}
	loopControl struct{ brk bool }
	filterBlock struct {
		f    filterExpr // x unset: the body's text
		body []node
	}
)

type param struct {
	name string
	def  expr // nil: required
}

// Expressions.
type (
	expr    any
	literal struct{ v value }
	nameRef struct{ name string }
	listLit struct{ items []expr }
	dictLit struct{ keys, vals []expr }
	getAttr struct {
		x    expr
		name string
	}
	getItem   struct{ x, key expr }
	sliceExpr struct{ x, lo, hi, step expr }
	callExpr  struct {
		fn   expr
		args []expr
		kw   []kwArg
	}
	filterExpr struct {
		x    expr
		name string
		args []expr
		kw   []kwArg
	}
	testExpr struct {
		x      expr
		name   string
		args   []expr
		negate bool
	}
	unaryExpr struct {
		op string
		x  expr
	}
	binaryExpr struct {
		op   string
		l, r expr
	}
	condExpr struct{ cond, a, b expr }
)

type kwArg struct {
	name string
	x    expr
}

// maxDepth bounds the nesting of blocks and of expressions, so that a
// hostile template cannot exhaust the parser's stack.
const maxDepth = 200

type parser struct {
	segs    []segment
	pos     int
	depth   int
	pending *exprParser // the tokens after the keyword that ended the last block (an elif's condition)
}

// parseTemplate builds the tree of src.
func parseTemplate(src string) ([]node, error) {
	segs, err := split(src)
	if err != nil {
		return nil, err
	}
	p := &parser{segs: segs}
	body, end, err := p.block()
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, fmt.Errorf("line %d: unexpected {%% %s %%}", p.segs[p.pos-1].line, end)
	}
	return body, nil
}

// block parses nodes up to a statement that ends it (endif, else, …),
// which it consumes and returns with its segment's tokens in p.rest.
func (p *parser) block() ([]node, string, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, "", fmt.Errorf("blocks nested deeper than %d", maxDepth)
	}
	var out []node
	for p.pos < len(p.segs) {
		seg := p.segs[p.pos]
		p.pos++
		switch seg.kind {
		case 't':
			if seg.body != "" {
				out = append(out, textNode{seg.body})
			}
		case 'c':
		case 'e':
			x, err := p.exprOf(seg)
			if err != nil {
				return nil, "", err
			}
			out = append(out, outputNode{x})
		case 's':
			n, end, err := p.statement(seg)
			if err != nil {
				return nil, "", fmt.Errorf("line %d: %w", seg.line, err)
			}
			if end != "" {
				return out, end, nil
			}
			if n != nil {
				out = append(out, n)
			}
		}
	}
	return out, "", nil
}

func (p *parser) exprOf(seg segment) (expr, error) {
	toks, err := tokenize(seg.body)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", seg.line, err)
	}
	ep := &exprParser{toks: toks, depth: p.depth}
	x, err := ep.expression()
	if err == nil && !ep.done() {
		err = fmt.Errorf("unexpected %q", ep.peek().text)
	}
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", seg.line, err)
	}
	return x, nil
}

// enders are the keywords that close or divide a block.
var enders = map[string]bool{"endif": true, "elif": true, "else": true, "endfor": true, "endmacro": true,
	"endset": true, "endgeneration": true, "endraw": true, "endfilter": true, "endcall": true}

func (p *parser) statement(seg segment) (node, string, error) {
	toks, err := tokenize(seg.body)
	if err != nil {
		return nil, "", err
	}
	if len(toks) == 0 || toks[0].kind != 'n' {
		return nil, "", fmt.Errorf("empty or malformed statement")
	}
	kw := toks[0].text
	ep := &exprParser{toks: toks[1:], depth: p.depth}
	if enders[kw] {
		p.pending = ep
		return nil, kw, nil
	}
	var n node
	switch kw {
	case "if":
		n, err = p.ifStmt(ep)
	case "for":
		n, err = p.forStmt(ep)
	case "set":
		n, err = p.setStmt(ep)
	case "macro":
		n, err = p.macroStmt(ep)
	case "break", "continue":
		n = loopControl{brk: kw == "break"}
	case "generation", "raw":
		n, err = p.wrapper("end" + kw)
	case "filter":
		n, err = p.filterBlock(ep)
	default:
		return nil, "", fmt.Errorf("unsupported statement %q", kw)
	}
	if err == nil && !ep.done() {
		err = fmt.Errorf("unexpected %q in %s", ep.peek().text, kw)
	}
	return n, "", err
}

// wrapper parses a block that only groups its body ({% generation %}
// marks training targets; its text renders as it is).
func (p *parser) wrapper(end string) (node, error) {
	body, e, err := p.block()
	if err != nil {
		return nil, err
	}
	if e != end {
		return nil, fmt.Errorf("expected {%% %s %%}, got %q", end, e)
	}
	return ifNode{conds: []expr{literal{true}}, bodies: [][]node{body}}, nil
}

// filterBlock parses {% filter name(args) %}…{% endfilter %}: the body's
// text passed through the filter.
func (p *parser) filterBlock(ep *exprParser) (node, error) {
	name, err := ep.dottedName()
	if err != nil {
		return nil, err
	}
	f := filterExpr{name: name}
	if ep.accept("(") {
		if f.args, f.kw, err = ep.args(); err != nil {
			return nil, err
		}
	}
	body, end, err := p.block()
	if err != nil {
		return nil, err
	}
	if end != "endfilter" {
		return nil, fmt.Errorf("filter without endfilter")
	}
	return filterBlock{f, body}, nil
}

func (p *parser) ifStmt(ep *exprParser) (node, error) {
	var n ifNode
	cond, err := ep.expression()
	for err == nil {
		var body []node
		var end string
		body, end, err = p.block()
		if err != nil {
			break
		}
		n.conds, n.bodies = append(n.conds, cond), append(n.bodies, body)
		switch end {
		case "elif":
			cond, err = p.pending.expression()
			if err == nil {
				err = p.pending.end()
			}
			continue
		case "else":
			if n.els, end, err = p.block(); err == nil && end != "endif" {
				err = fmt.Errorf("else without endif")
			}
		case "endif":
		default:
			err = fmt.Errorf("if without endif")
		}
		return n, err
	}
	return nil, err
}

func (p *parser) forStmt(ep *exprParser) (node, error) {
	var n forNode
	for {
		name, err := ep.name()
		if err != nil {
			return nil, err
		}
		n.vars = append(n.vars, name)
		if !ep.accept(",") {
			break
		}
	}
	if !ep.acceptName("in") {
		return nil, fmt.Errorf("for without in")
	}
	var err error
	// The iterable stops before "if": parse it without conditional
	// expressions, as Jinja does.
	if n.iter, err = ep.or(); err != nil {
		return nil, err
	}
	if ep.acceptName("if") {
		if n.cond, err = ep.or(); err != nil {
			return nil, err
		}
	}
	ep.acceptName("recursive")
	body, end, err := p.block()
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		n.els, end, err = p.block()
		if err != nil {
			return nil, err
		}
	}
	if end != "endfor" {
		return nil, fmt.Errorf("for without endfor")
	}
	return n, nil
}

func (p *parser) setStmt(ep *exprParser) (node, error) {
	var n setNode
	name, err := ep.name()
	if err != nil {
		return nil, err
	}
	n.vars = []string{name}
	if ep.accept(".") {
		if n.attr, err = ep.name(); err != nil {
			return nil, err
		}
	}
	for n.attr == "" && ep.accept(",") {
		if name, err = ep.name(); err != nil {
			return nil, err
		}
		n.vars = append(n.vars, name)
	}
	if ep.accept("=") {
		n.value, err = ep.tupleOrExpression()
		return n, err
	}
	if !ep.done() {
		return nil, fmt.Errorf("set without =")
	}
	body, end, err := p.block()
	if err != nil {
		return nil, err
	}
	if end != "endset" {
		return nil, fmt.Errorf("set block without endset")
	}
	n.body = body
	return n, nil
}

func (p *parser) macroStmt(ep *exprParser) (node, error) {
	var n macroNode
	var err error
	if n.name, err = ep.name(); err != nil {
		return nil, err
	}
	if !ep.accept("(") {
		return nil, fmt.Errorf("macro without (")
	}
	for !ep.accept(")") {
		var pr param
		if pr.name, err = ep.name(); err != nil {
			return nil, err
		}
		if ep.accept("=") {
			if pr.def, err = ep.expression(); err != nil {
				return nil, err
			}
		}
		n.params = append(n.params, pr)
		if !ep.accept(",") {
			if !ep.accept(")") {
				return nil, fmt.Errorf("bad macro parameters")
			}
			break
		}
	}
	body, end, err := p.block()
	if err != nil {
		return nil, err
	}
	if end != "endmacro" {
		return nil, fmt.Errorf("macro without endmacro")
	}
	n.body = body
	return n, nil
}

// exprParser parses the tokens of one tag.
type exprParser struct {
	toks  []token
	pos   int
	depth int
}

func (e *exprParser) done() bool { return e.pos >= len(e.toks) }

func (e *exprParser) peek() token {
	if e.done() {
		return token{}
	}
	return e.toks[e.pos]
}

func (e *exprParser) end() error {
	if !e.done() {
		return fmt.Errorf("unexpected %q", e.peek().text)
	}
	return nil
}

func (e *exprParser) accept(op string) bool {
	if t := e.peek(); t.kind == 'o' && t.text == op {
		e.pos++
		return true
	}
	return false
}

func (e *exprParser) acceptName(n string) bool {
	if t := e.peek(); t.kind == 'n' && t.text == n {
		e.pos++
		return true
	}
	return false
}

func (e *exprParser) isName(n string) bool { t := e.peek(); return t.kind == 'n' && t.text == n }

func (e *exprParser) name() (string, error) {
	t := e.peek()
	if t.kind != 'n' {
		if t.kind == 0 {
			return "", fmt.Errorf("expected a name at the end")
		}
		return "", fmt.Errorf("expected a name, got %q", t.text)
	}
	e.pos++
	return t.text, nil
}

func (e *exprParser) enter() error {
	e.depth++
	if e.depth > maxDepth {
		return fmt.Errorf("expression nested deeper than %d", maxDepth)
	}
	return nil
}

// tupleOrExpression is "a, b" (a tuple, as in {% set x = a, b %}) or one
// expression.
func (e *exprParser) tupleOrExpression() (expr, error) {
	x, err := e.expression()
	if err != nil || !e.isOp(",") {
		return x, err
	}
	items := []expr{x}
	for e.accept(",") && !e.done() {
		if x, err = e.expression(); err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	return listLit{items}, nil
}

func (e *exprParser) isOp(op string) bool { t := e.peek(); return t.kind == 'o' && t.text == op }

// expression: or ["if" or ["else" expression]]
func (e *exprParser) expression() (expr, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer func() { e.depth-- }()
	x, err := e.or()
	if err != nil || !e.acceptName("if") {
		return x, err
	}
	cond, err := e.or()
	if err != nil {
		return nil, err
	}
	var alt expr = literal{undefined{}}
	if e.acceptName("else") {
		if alt, err = e.expression(); err != nil {
			return nil, err
		}
	}
	return condExpr{cond, x, alt}, nil
}

func (e *exprParser) or() (expr, error) {
	x, err := e.and()
	for err == nil && e.acceptName("or") {
		var r expr
		r, err = e.and()
		x = binaryExpr{"or", x, r}
	}
	return x, err
}

func (e *exprParser) and() (expr, error) {
	x, err := e.not()
	for err == nil && e.acceptName("and") {
		var r expr
		r, err = e.not()
		x = binaryExpr{"and", x, r}
	}
	return x, err
}

func (e *exprParser) not() (expr, error) {
	if e.acceptName("not") {
		if err := e.enter(); err != nil {
			return nil, err
		}
		defer func() { e.depth-- }()
		x, err := e.not()
		return unaryExpr{"not", x}, err
	}
	return e.compare()
}

var compareOps = map[string]bool{"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true}

func (e *exprParser) compare() (expr, error) {
	x, err := e.math1()
	for err == nil {
		t := e.peek()
		var op string
		switch {
		case t.kind == 'o' && compareOps[t.text]:
			op = t.text
			e.pos++
		case e.isName("in"):
			op = "in"
			e.pos++
		case e.isName("not") && e.pos+1 < len(e.toks) && e.toks[e.pos+1].kind == 'n' && e.toks[e.pos+1].text == "in":
			op = "not in"
			e.pos += 2
		default:
			return x, nil
		}
		var r expr
		r, err = e.math1()
		x = binaryExpr{op, x, r}
	}
	return nil, err
}

func (e *exprParser) math1() (expr, error) {
	x, err := e.concat()
	for err == nil && (e.isOp("+") || e.isOp("-")) {
		op := e.peek().text
		e.pos++
		var r expr
		r, err = e.concat()
		x = binaryExpr{op, x, r}
	}
	return x, err
}

func (e *exprParser) concat() (expr, error) {
	x, err := e.math2()
	for err == nil && e.accept("~") {
		var r expr
		r, err = e.math2()
		x = binaryExpr{"~", x, r}
	}
	return x, err
}

func (e *exprParser) math2() (expr, error) {
	x, err := e.pow()
	for err == nil && (e.isOp("*") || e.isOp("/") || e.isOp("//") || e.isOp("%")) {
		op := e.peek().text
		e.pos++
		var r expr
		r, err = e.pow()
		x = binaryExpr{op, x, r}
	}
	return x, err
}

func (e *exprParser) pow() (expr, error) {
	x, err := e.unary()
	for err == nil && e.accept("**") {
		var r expr
		r, err = e.unary()
		x = binaryExpr{"**", x, r}
	}
	return x, err
}

func (e *exprParser) unary() (expr, error) { return e.unaryFiltered(true) }

// unaryFiltered parses a unary expression; filters and tests after it
// apply to the whole of it ("-5|abs" is 5), as in Jinja.
func (e *exprParser) unaryFiltered(withFilters bool) (expr, error) {
	var x expr
	var err error
	if e.isOp("-") || e.isOp("+") {
		op := e.peek().text
		e.pos++
		if err := e.enter(); err != nil {
			return nil, err
		}
		defer func() { e.depth-- }()
		var operand expr
		operand, err = e.unaryFiltered(false)
		x = unaryExpr{op, operand}
	} else {
		x, err = e.postfix()
	}
	if err != nil || !withFilters {
		return x, err
	}
	return e.filters(x)
}

// filters parses "| name(args)" and "is [not] name(args)" after x.
func (e *exprParser) filters(x expr) (expr, error) {
	for {
		switch {
		case e.accept("|"):
			name, err := e.dottedName()
			if err != nil {
				return nil, err
			}
			f := filterExpr{x: x, name: name}
			if e.accept("(") {
				if f.args, f.kw, err = e.args(); err != nil {
					return nil, err
				}
			}
			x = f
		case e.acceptName("is"):
			t := testExpr{x: x, negate: e.acceptName("not")}
			name, err := e.dottedName()
			if err != nil {
				return nil, err
			}
			t.name = name
			if e.accept("(") {
				if t.args, _, err = e.args(); err != nil {
					return nil, err
				}
			} else if k := e.peek().kind; k == 's' || k == 'i' || k == 'f' || (k == 'n' && isConst(e.peek().text)) {
				// "is divisibleby 3", "is equalto 'x'", "is sameas none"
				arg, err := e.primary()
				if err != nil {
					return nil, err
				}
				t.args = []expr{arg}
			}
			x = t
		default:
			return x, nil
		}
	}
}

func isConst(n string) bool {
	switch n {
	case "none", "None", "true", "True", "false", "False":
		return true
	}
	return false
}

func (e *exprParser) dottedName() (string, error) {
	n, err := e.name()
	for err == nil && e.accept(".") {
		var m string
		m, err = e.name()
		n += "." + m
	}
	return n, err
}

// args parses call arguments after "(" up to and including ")".
func (e *exprParser) args() ([]expr, []kwArg, error) {
	var args []expr
	var kw []kwArg
	for !e.accept(")") {
		if t := e.peek(); t.kind == 'n' && e.pos+1 < len(e.toks) && e.toks[e.pos+1].kind == 'o' && e.toks[e.pos+1].text == "=" {
			e.pos += 2
			x, err := e.expression()
			if err != nil {
				return nil, nil, err
			}
			kw = append(kw, kwArg{t.text, x})
		} else {
			x, err := e.expression()
			if err != nil {
				return nil, nil, err
			}
			args = append(args, x)
		}
		if !e.accept(",") {
			if !e.accept(")") {
				return nil, nil, fmt.Errorf("expected , or ) in arguments, got %q", e.peek().text)
			}
			break
		}
	}
	return args, kw, nil
}

func (e *exprParser) postfix() (expr, error) {
	x, err := e.primary()
	for err == nil {
		switch {
		case e.accept("."):
			var name string
			t := e.peek()
			if t.kind == 'i' { // x.0, as Jinja allows
				e.pos++
				x = getItem{x, literal{t.i}}
				continue
			}
			if name, err = e.name(); err != nil {
				return nil, err
			}
			x = getAttr{x, name}
		case e.accept("["):
			x, err = e.subscript(x)
		case e.accept("("):
			c := callExpr{fn: x}
			c.args, c.kw, err = e.args()
			x = c
		default:
			return x, nil
		}
	}
	return nil, err
}

// subscript parses "[key]" or "[lo:hi:step]" after "[".
func (e *exprParser) subscript(x expr) (expr, error) {
	var parts [3]expr
	n := 0
	for {
		if !e.isOp(":") && !e.isOp("]") {
			v, err := e.expression()
			if err != nil {
				return nil, err
			}
			parts[n] = v
		}
		if e.accept("]") {
			break
		}
		if !e.accept(":") || n == 2 {
			return nil, fmt.Errorf("bad subscript")
		}
		n++
	}
	if n == 0 {
		if parts[0] == nil {
			return nil, fmt.Errorf("empty subscript")
		}
		return getItem{x, parts[0]}, nil
	}
	return sliceExpr{x, parts[0], parts[1], parts[2]}, nil
}

func (e *exprParser) primary() (expr, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer func() { e.depth-- }()
	t := e.peek()
	e.pos++
	switch t.kind {
	case 0:
		e.pos--
		return nil, fmt.Errorf("unexpected end of expression")
	case 's':
		s := t.str
		for e.peek().kind == 's' { // adjacent literals concatenate
			s += e.peek().str
			e.pos++
		}
		return literal{s}, nil
	case 'i':
		return literal{t.i}, nil
	case 'f':
		return literal{t.f}, nil
	case 'n':
		switch t.text {
		case "true", "True":
			return literal{true}, nil
		case "false", "False":
			return literal{false}, nil
		case "none", "None":
			return literal{nil}, nil
		}
		return nameRef{t.text}, nil
	}
	switch t.text {
	case "(":
		if e.accept(")") {
			return listLit{}, nil
		}
		x, err := e.expression()
		if err != nil {
			return nil, err
		}
		if e.accept(")") {
			return x, nil
		}
		items := []expr{x}
		for e.accept(",") {
			if e.accept(")") {
				return listLit{items}, nil
			}
			if x, err = e.expression(); err != nil {
				return nil, err
			}
			items = append(items, x)
		}
		if !e.accept(")") {
			return nil, fmt.Errorf("expected )")
		}
		return listLit{items}, nil
	case "[":
		var l listLit
		for !e.accept("]") {
			x, err := e.expression()
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, x)
			if !e.accept(",") && !e.isOp("]") {
				return nil, fmt.Errorf("expected , or ] in list")
			}
		}
		return l, nil
	case "{":
		var d dictLit
		for !e.accept("}") {
			k, err := e.expression()
			if err != nil {
				return nil, err
			}
			if !e.accept(":") {
				return nil, fmt.Errorf("expected : in dict")
			}
			v, err := e.expression()
			if err != nil {
				return nil, err
			}
			d.keys, d.vals = append(d.keys, k), append(d.vals, v)
			if !e.accept(",") && !e.isOp("}") {
				return nil, fmt.Errorf("expected , or } in dict")
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("unexpected %q", strings.TrimSpace(t.text))
}
