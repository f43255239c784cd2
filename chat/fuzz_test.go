package chat

import (
	"testing"
)

// FuzzParseRender: Parse and Render return errors, never panic, on any
// template and conversation.
func FuzzParseRender(f *testing.F) {
	f.Add("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}", "hi", true)
	f.Add("{{ raise_exception('x') }}", "", false)
	f.Add("{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}{% endif %}", "sys", true)
	f.Fuzz(func(t *testing.T, src, content string, gen bool) {
		tm, err := Parse(src, "<s>", "</s>")
		if err != nil {
			return
		}
		_, _ = tm.Render([]Message{{"system", content}, {"user", content}, {"assistant", content}}, gen)
	})
}
