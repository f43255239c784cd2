package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-ml/weft/chat/internal/jinja"
)

// Limits of one rendering: a chat prompt is at most a few MiB of text,
// and a template needs far fewer steps than this for any conversation
// that fits a context; a hostile one stops here with an error.
var renderLimits = jinja.Limits{Steps: 20_000_000, Output: 32 << 20, Depth: 50, Time: 10 * time.Second}

// probeLimits bound the trial renderings Parse runs.
var probeLimits = jinja.Limits{Steps: 1_000_000, Output: 1 << 20, Depth: 50, Time: 2 * time.Second}

// endMarkers are the end-of-turn strings of the common formats; a
// template's Stops are those its source spells, and its EOS.
var endMarkers = []string{"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>", "<|END_OF_TURN_TOKEN|>",
	"<|end_of_turn|>", "<|EOT|>", "<|endoftext|>", "<|end_of_text|>", "<|turn_end|>", "<｜end▁of▁sentence｜>"}

// Parse compiles a Jinja chat template. bos and eos are the values of the
// template's bos_token and eos_token. It renders the template on trial
// conversations: a template that fails on a plain user message (other
// than by raise_exception) is refused here, so that callers can fall back,
// and one that drops system messages gets them merged into the next user
// message when rendering (as llama.cpp does).
func Parse(source string, bos, eos string) (*Template, error) {
	jt, err := jinja.Parse(source)
	if err != nil {
		return nil, fmt.Errorf("parsing the Jinja template: %w", err)
	}
	j := &jinjaTemplate{t: jt, bos: bos, eos: eos}
	var raised *jinja.RaisedError
	if _, err := j.run([]Message{{"user", "Hello"}}, true, probeLimits); err != nil && !errors.As(err, &raised) {
		return nil, fmt.Errorf("the Jinja template does not render a user message: %w", err)
	}
	const needle = "<System Needle>"
	out, _ := j.run([]Message{{"system", needle}, {"user", "<User Needle>"}}, false, probeLimits)
	j.mergeSystem = !strings.Contains(out, needle)
	t := &Template{name: "jinja", bos: bos, eos: eos, render: j.render}
	for _, m := range endMarkers {
		if strings.Contains(source, m) {
			t.stops = append(t.stops, m)
		}
	}
	if eos != "" && !contains(t.stops, eos) {
		t.stops = append(t.stops, eos)
	}
	return t, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

type jinjaTemplate struct {
	t           *jinja.Template
	bos, eos    string
	mergeSystem bool // the template ignores system messages
}

func (j *jinjaTemplate) render(msgs []Message, gen bool) (string, error) {
	if j.mergeSystem {
		msgs = mergeSystem(msgs)
	}
	return j.run(msgs, gen, renderLimits)
}

func (j *jinjaTemplate) run(msgs []Message, gen bool, lim jinja.Limits) (string, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = jinja.Dict{{Key: "role", Value: m.Role}, {Key: "content", Value: m.Content}}
	}
	return j.t.Render(map[string]any{
		"messages":              list,
		"add_generation_prompt": gen,
		"bos_token":             j.bos,
		"eos_token":             j.eos,
		"strftime_now":          jinja.Func(strftimeNow),
	}, lim)
}

// mergeSystem folds system messages into the next user message, joined
// by a newline, for templates without a system role; system text that
// no user message follows directly becomes a user message of its own
// (llama.cpp's polyfill, so the prompts match its).
func mergeSystem(msgs []Message) []Message {
	var out []Message
	pending := ""
	flush := func() {
		if pending != "" {
			out = append(out, Message{Role: "user", Content: pending})
			pending = ""
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case "system":
			if pending != "" {
				pending += "\n"
			}
			pending += m.Content
			continue
		case "user":
			if pending != "" {
				if m.Content != "" {
					pending += "\n" + m.Content
				}
				m.Content, pending = pending, ""
			}
		default:
			flush()
		}
		out = append(out, m)
	}
	flush()
	return out
}

// strftimeNow is the strftime_now(format) that recent templates call for
// the date, for the formats they use.
func strftimeNow(args []any) (any, error) {
	if len(args) != 1 {
		return nil, errors.New("strftime_now takes one format")
	}
	f, ok := args[0].(string)
	if !ok {
		return nil, errors.New("strftime_now: the format must be a string")
	}
	now := time.Now()
	r := strings.NewReplacer("%d", now.Format("02"), "%b", now.Format("Jan"), "%B", now.Format("January"),
		"%Y", now.Format("2006"), "%m", now.Format("01"), "%y", now.Format("06"), "%H", now.Format("15"),
		"%M", now.Format("04"), "%S", now.Format("05"), "%a", now.Format("Mon"), "%A", now.Format("Monday"),
		"%-d", now.Format("2"), "%%", "%")
	return r.Replace(f), nil
}
