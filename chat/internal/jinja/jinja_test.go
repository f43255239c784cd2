package jinja

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jinja2Cases pair templates with the output of Python's Jinja2 3.1.6
// (trim_blocks and lstrip_blocks on, the loopcontrols extension, and
// Hugging Face's tojson), rendered with the messages of render below.
var jinja2Cases = []struct{ src, want string }{
	{"{{ 1 + 2 * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 7 / 2 }}|{{ 1.5 * 2 }}",
		"7|3|-4|1|2|1024|3.5|3.0"},
	{"{{ 'a' ~ 1 ~ none ~ true }}|{{ [1, 'a', none, true, 1.0] }}|{{ {'a': 1, 'b': [2]} }}",
		"a1NoneTrue|[1, 'a', None, True, 1.0]|{'a': 1, 'b': [2]}"},
	{"{{ \"it's\" }}|{{ ['it\\'s', \"x\\\"y\"] }}|{{ 'a\\nb' }}",
		"it's|[\"it's\", 'x\"y']|a\nb"},
	{"{% for x in [1,2,3] %}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex0 }},{% endfor %}",
		"1TrueFalse32,2FalseFalse31,3FalseTrue30,"},
	{"{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.last }}{% else %}none{% endfor %}",
		"2False4True"},
	{"{% for x in [] %}{{ x }}{% else %}empty{% endfor %}",
		"empty"},
	{"{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}",
		"a=1;b=2;"},
	{"{% set ns = namespace(n=0) %}{% for i in range(5) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
		"10"},
	{"{% set x = 1 %}{% for i in range(2) %}{% set x = 5 %}{% endfor %}{{ x }}",
		"1"},
	{"{{ 'Hello World'[1:4] }}|{{ 'abc'[::-1] }}|{{ [1,2,3,4,5][1:-1] }}|{{ [1,2,3][-1] }}|{{ [1,2,3,4,5][::2] }}|{{ [1,2,3,4,5][4:1:-1] }}",
		"ell|cba|[2, 3, 4]|3|[1, 3, 5]|[5, 4, 3]"},
	{"{{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ 'a,b'.split(',') }}|{{ 'a b  c'.split() }}|{{ 'hello'.title() }}|{{ 'HeLLo'.capitalize() }}|{{ 'abc'.upper() }}",
		"x|hi|['a', 'b']|['a', 'b', 'c']|Hello|Hello|ABC"},
	{"{{ 'abc'.startswith('a') }}|{{ 'abc'.endswith(('x','c')) }}|{{ 'aXbX'.replace('X','y') }}",
		"True|True|ayby"},
	{"{{ x is defined }}|{{ x is not defined }}|{{ none is none }}|{{ 3 is odd }}|{{ 4 is divisibleby 2 }}|{{ 'a' is string }}|{{ 1 is number }}|{{ {} is mapping }}",
		"False|True|True|True|True|True|True|True"},
	{"{{ [3,1,2]|sort }}|{{ [3,1,2]|sort(reverse=true) }}|{{ ['b','A','c']|sort }}|{{ [1,2,2,3]|unique|list }}|{{ [1,2,3]|sum }}|{{ [1,5,3]|max }}|{{ [1,2]|reverse|list }}",
		"[1, 2, 3]|[3, 2, 1]|['A', 'b', 'c']|[1, 2, 3]|6|5|[2, 1]"},
	{"{{ [1,2,3]|join('-') }}|{{ 'abc'|length }}|{{ [1,2]|length }}|{{ 'x'|upper }}|{{ '  y '|trim }}|{{ 3.7|int }}|{{ '12'|int + 1 }}|{{ 2|float }}",
		"1-2-3|3|2|X|y|3|13|2.0"},
	{"{{ undefinedvar|default('d') }}|{{ ''|default('e', true) }}|{{ none|default('n') }}",
		"d|e|None"},
	{"{{ {'a': 1, 'b': 'x\\ny', 'c': [1, 2.5, none, true]}|tojson }}",
		"{\"a\": 1, \"b\": \"x\\ny\", \"c\": [1, 2.5, null, true]}"},
	{"{{ {'a': {'b': [1, {'c': 2}]}, 'e': []}|tojson(indent=2) }}",
		"{\n  \"a\": {\n    \"b\": [\n      1,\n      {\n        \"c\": 2\n      }\n    ]\n  },\n  \"e\": []\n}"},
	{"{{ [{'role':'a'},{'role':'b'},{'role':'a'}]|selectattr('role','equalto','a')|list|length }}|{{ [{'r':1},{'r':2}]|map(attribute='r')|list }}|{{ [1,0,2]|select|list }}|{{ [1,2,3]|reject('odd')|list }}",
		"2|[1, 2]|[1, 2]|[2]"},
	{"{{ 'a' if true else 'b' }}|{{ 'a' if false else 'b' }}|{{ 'a' if false }}|{{ 1 in [1,2] }}|{{ 'x' not in 'abc' }}|{{ 'k' in {'k': 1} }}",
		"a|b||True|True|True"},
	{"{{ true and 'x' }}|{{ false or 'y' }}|{{ not none }}|{{ 0 or [] or 'z' }}",
		"x|y|True|z"},
	{"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }}|{{ greet('Al', punct='?') }}",
		"Hi Bob!|Hi Al?"},
	{"{%- set y -%} block {{ 1 + 1 }} {%- endset -%}[{{ y }}]\n  {% if true %}\n    yes\n  {% endif %}\nafter\n{% for m in [1,2] %}\n  - {{ m }}\n{% endfor %}\nline1 {# comment #}\n  {{- 'x' -}}  \n  z",
		"[block 2]\n    yes\nafter\n  - 1\n  - 2\nline1 xz"},
	{"{{ 'abc' | replace('b', 'B') }}|{{ 'a\\nb'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'one two'|wordcount }}",
		"aBc|a\n  b|  a\n  b|2"},
	{"{{ [1,2] + [3] }}|{{ 'ab' * 3 }}|{{ [0] * 3 }}|{{ 'a' < 'b' }}|{{ 2 >= 2 }}|{{ 1 == 1.0 }}|{{ true == 1 }}",
		"[1, 2, 3]|ababab|[0, 0, 0]|True|True|True|True"},
	{"{% set a, b = 1, 2 %}{{ a }}{{ b }}|{% set l = [] %}{% set _ = l.append(3) %}{{ l }}|{{ {'a':1}.get('b', 'zz') }}|{{ {'a':1}.keys()|list }}",
		"12|[3]|zz|['a']"},
	{"{{ 'abc'.find('c') }}|{{ 'ABC'.lower() }}|{{ '1'.isdigit() }}|{{ 5|abs }}|{{ -5|abs }}|{{ 2.567|round(1) }}|{{ 2.5|round }}",
		"2|abc|True|5|5|2.6|2.0"},
	{"{% for i in range(3) %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}|{% for i in range(9) %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}",
		"02|01"},
	{"{{ range(5)|list }}|{{ range(1, 10, 3)|list }}|{{ range(5, 0, -2)|list }}",
		"[0, 1, 2, 3, 4]|[1, 4, 7]|[5, 3, 1]"},
	{"{{ messages[0]['role'] }}|{{ messages[0].content }}|{{ messages|length }}|{{ messages[-1].role }}|{{ messages[1:]|map(attribute='role')|join(',') }}",
		"system|S|2|user|user"},
	{"",
		""},
	{"{{ '%s-%d' % ('a', 3) }}|{{ '%5.2f' % 2.5 }}|{{ '%s' % 'x' }}|{{ '%%' % () }}|{{ '%r' % 'q' }}|{{ '%x' % 255 }}|{{ '%-4s|' % 'ab' }}",
		"a-3| 2.50|x|%|'q'|ff|ab  |"},
	{"{{ '%s and %s'|format('a', 'b') }}|{{ '{} {}'.format(1, 'b') }}|{{ '{1}{0}'.format('x', 'y') }}|{{ '{name}!'.format(name='N') }}|{{ '{{}}'.format() }}",
		"a and b|1 b|yx|N!|{}"},
}

func msg(role, content string) Dict { return Dict{{"role", role}, {"content", content}} }

func render(t *testing.T, src string, lim Limits) (string, error) {
	t.Helper()
	tm, err := Parse(src)
	if err != nil {
		return "", err
	}
	return tm.Render(map[string]any{"messages": []any{msg("system", "S"), msg("user", "U")}}, lim)
}

func TestAgainstJinja2(t *testing.T) {
	for _, c := range jinja2Cases {
		got, err := render(t, c.src, Limits{})
		require.NoError(t, err, c.src)
		assert.Equal(t, c.want, got, c.src)
	}
}

// The whitespace rule where llama.cpp differs from Jinja2: blanks that
// start a line are stripped before {{ too (the ChatGLM3 conformance case).
func TestLstripBeforeExpression(t *testing.T) {
	got, err := render(t, "a\n  {{ 'b' }}\n  {% if true %}c{% endif %}", Limits{})
	require.NoError(t, err)
	assert.Equal(t, "a\nb\nc", got)
}

// Lenient undefined: attributes of undefined are undefined, as llama.cpp
// treats them; calling one is an error naming it.
func TestUndefined(t *testing.T) {
	got, err := render(t, "{{ x.y.z }}|{{ x.y is defined }}|{{ messages[9].role }}|{% for a in nothing %}x{% endfor %}", Limits{})
	require.NoError(t, err)
	assert.Equal(t, "|False||", got)
	_, err = render(t, "{{ nothing() }}", Limits{})
	require.ErrorContains(t, err, "nothing is undefined")
}

func TestRaise(t *testing.T) {
	_, err := render(t, "{{ raise_exception('no system role') }}", Limits{})
	var raised *RaisedError
	require.ErrorAs(t, err, &raised)
	assert.Equal(t, "no system role", raised.Message)
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"{% for m in messages %}", "{{ messages[0]['role' }}", "{% if x %}{% else %}", "{% endfor %}",
		"{{ 'unterminated }}", "{{ 1 + }}", "{% unknown %}", "{{ a b }}", "{% set %}", "{% macro f( %}{% endmacro %}",
		"{{", "{%", "{#", "{{ [1, 2 }}", "{{ {'a' 1} }}", "{% for %}{% endfor %}", "{{ x[] }}", "{{ x[1:2:3:4] }}",
	} {
		_, err := Parse(src)
		assert.Error(t, err, src)
	}
}

func TestRuntimeErrors(t *testing.T) {
	for _, src := range []string{
		"{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 'a' + 1 }}", "{{ 'a' < 1 }}", "{{ none.x() }}", "{% for x in none %}{% endfor %}",
		"{{ 5 is divisibleby 0 }}", "{{ [1][::0] }}", "{{ range(1, 2, 0) }}", "{{ x|nosuchfilter }}", "{{ x is nosuchtest }}",
		"{% set ns.a = 1 %}", "{% set a, b = [1] %}", "{{ 3|indent(-1) }}", "{{ 1|round(99) }}", "{{ [].pop() }}",
	} {
		_, err := render(t, src, Limits{})
		assert.Error(t, err, src)
	}
}

// Hostile templates end with ErrLimit, quickly, without growing memory
// past the output limit.
func TestLimits(t *testing.T) {
	lim := Limits{Steps: 200_000, Output: 1 << 20, Depth: 20, Time: 2 * time.Second}
	for _, src := range []string{
		"{% for i in range(100000000) %}{% endfor %}",
		"{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
		"{{ 'a' * 100000000 }}",
		"{{ [0] * 100000000 }}",
		"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
		"{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
		"{% set l = [1] %}{% for i in range(40) %}{% set l = l + l %}{% endfor %}",
		"{% for i in range(100000) %}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{% endfor %}",
		"{{ 'x'|indent(999) * 10000000 }}",
		"{% set l = [] %}{% for i in range(10000000) %}{% set _ = l.append(i) %}{% endfor %}",
		"{% set big = range(60000)|list %}{% for i in range(100000) %}{% set x = big + big %}{% endfor %}",
		"{% set s = 'x' * 500000 %}{% for i in range(100000) %}{% set t = s ~ s %}{% endfor %}",
	} {
		start := time.Now()
		_, err := render(t, src, lim)
		assert.True(t, errors.Is(err, ErrLimit), "%s: %v", src, err)
		assert.Less(t, time.Since(start), 3*time.Second, src)
	}
}

// Deep nesting is refused by the parser rather than exhausting its stack.
func TestDeepNesting(t *testing.T) {
	for _, src := range []string{
		"{{ " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + " }}",
		"{{ " + strings.Repeat("not ", 10000) + "1 }}",
		"{{ " + strings.Repeat("-", 10000) + "1 }}",
		"{{ " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + " }}",
		strings.Repeat("{% if true %}", 10000) + strings.Repeat("{% endif %}", 10000),
	} {
		_, err := Parse(src)
		assert.ErrorContains(t, err, "nested deeper", src[:20])
	}
}

// Self-referential values print and compare without recursing for ever.
func TestSelfReference(t *testing.T) {
	got, err := render(t, "{% set l = [1] %}{% set _ = l.append(l) %}{{ l|length }} {{ (l|string)[:12] }} {{ l == l }}", Limits{})
	require.NoError(t, err)
	assert.Equal(t, "2 [1, [1, [1,  False", got)
	_, err = render(t, "{% set l = [] %}{% set _ = l.append(l) %}{{ l|tojson }}", Limits{})
	assert.ErrorContains(t, err, "nested deeper")
}

// A "}}" that closes a dict literal does not end the tag.
func TestBracesInTags(t *testing.T) {
	got, err := render(t, `{{ {'a': {'b': [1, (2)]}}|tojson }}{% set d = {'x': {'y': 1}} %}{{ d.x.y }}`, Limits{})
	require.NoError(t, err)
	assert.Equal(t, `{"a": {"b": [1, 2]}}1`, got)
}
