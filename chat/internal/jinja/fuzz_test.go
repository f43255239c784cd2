package jinja

import (
	"strings"
	"testing"
	"time"
)

// FuzzTemplate: any source parses or fails with an error, and any parsed
// template renders or fails with an error, within the limits.
func FuzzTemplate(f *testing.F) {
	for _, c := range jinja2Cases {
		f.Add(c.src)
	}
	f.Add("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}")
	f.Add("{%- for m in messages if m.role != 'system' -%}{{ loop.index }}{{ m.content|trim|tojson }}{%- endfor -%}")
	f.Add("{% raw %}{{ x }}{% endraw %}{% filter upper %}a{% endfilter %}")
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := Parse(src)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") { // a recovered panic
				t.Fatal(err)
			}
			return
		}
		out, err := tm.Render(map[string]any{"messages": []any{msg("system", "S"), msg("user", "U")}, "add_generation_prompt": true},
			Limits{Steps: 100_000, Output: 1 << 16, Depth: 10, Time: time.Second})
		if err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatal(err)
		}
		if len(out) > 1<<16 {
			t.Fatalf("output of %d bytes past the limit", len(out))
		}
	})
}
