package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weft-ml/weft/runtime"
)

// Message is one turn of a conversation. Role is "system", "user" or
// "assistant"; other roles ("tool") are passed to Jinja templates as they
// are, and the built-in formats write them under their own name where the
// format names roles (chatml, llama3, phi3, …), else as a reply turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Template renders conversations in one model's prompt format. It is
// immutable and safe for concurrent use.
type Template struct {
	name     string
	bos, eos string
	stops    []string
	render   func(msgs []Message, addGenerationPrompt bool) (string, error)
}

// Name says which template this is: a built-in name ("chatml"), or where
// the Jinja source came from, with the reason for a fallback.
func (t *Template) Name() string { return t.name }

// Stops are the end-of-turn strings a reply stops at ("<|im_end|>",
// "<|eot_id|>", …); it may be empty. The runtime already stops at the
// model's end-of-generation tokens; these catch the same markers when a
// model spells them out in ordinary tokens.
func (t *Template) Stops() []string { return append([]string(nil), t.stops...) }

// Render formats msgs as one prompt. With addGenerationPrompt it ends with
// the opening of an assistant turn, so the model's continuation is the
// reply. The text has no leading BOS and no trailing EOS (see the package
// doc).
func (t *Template) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	out, err := t.render(msgs, addGenerationPrompt)
	if err != nil {
		return "", fmt.Errorf("chat template %s: %w", t.name, err)
	}
	if t.bos != "" {
		out = strings.TrimPrefix(out, t.bos)
	}
	if t.eos != "" {
		out = strings.TrimSuffix(out, t.eos)
	}
	return out, nil
}

// ErrUnknownTemplate is returned by Named for a name it does not know.
var ErrUnknownTemplate = errors.New("unknown chat template")

// Named returns a built-in template by name (see Names), or an error
// wrapping ErrUnknownTemplate.
func Named(name string) (*Template, error) {
	canon, ok := aliases[name]
	if !ok {
		canon = name
	}
	nt, ok := named[canon]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownTemplate, name, strings.Join(Names(), ", "))
	}
	return &Template{name: canon, stops: nt.stops, render: func(msgs []Message, gen bool) (string, error) {
		var b strings.Builder
		nt.render(&b, msgs, gen)
		return b.String(), nil
	}}, nil
}

// FromModel returns the template of a loaded model: the GGUF's
// tokenizer.chat_template rendered as Jinja or, when the file has none (or
// one this package cannot parse), a built-in template chosen from the
// vocabulary and the architecture; Name says which and why. BOS and EOS
// are the texts of the model's tokenizer's tokens.
func FromModel(m *runtime.Model) (*Template, error) {
	if m == nil || m.File == nil || m.Tokenizer == nil {
		return nil, errors.New("chat.FromModel: no model")
	}
	tok := m.Tokenizer
	bos, eos := tok.Text(tok.BOS()), tok.Text(tok.EOS())
	src := m.File.String("tokenizer.chat_template", "")
	if src != "" {
		t, err := Parse(src, bos, eos)
		if err == nil {
			t.name = "jinja (the file's tokenizer.chat_template)"
			return t, nil
		}
		if name := detect(src); name != "" {
			return fallback(name, fmt.Sprintf("the file's tokenizer.chat_template did not parse (%v); it looks like %s", err, name))
		}
		return nil, fmt.Errorf("the file's tokenizer.chat_template: %w", err)
	}
	name := guess(m.File.Architecture(), tok.ID)
	return fallback(name, fmt.Sprintf("the file has no tokenizer.chat_template; chosen for architecture %q and its vocabulary", m.File.Architecture()))
}

// fallback is the built-in template name, labelled with why it was used.
func fallback(name, why string) (*Template, error) {
	t, err := Named(name)
	if err != nil {
		return nil, err
	}
	t.name = name + " (fallback: " + why + ")"
	return t, nil
}

// guess picks a built-in template for a model without one: the marker
// tokens in the vocabulary are the strongest evidence, the architecture
// the next; llama-2 is the format of the llama family's base models.
func guess(arch string, id func(string) (int32, bool)) string {
	has := func(s ...string) bool {
		for _, x := range s {
			if _, ok := id(x); !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("<|start_header_id|>", "<|eot_id|>"):
		return "llama3"
	case has("<|im_start|>", "<|im_end|>"):
		return "chatml"
	case has("<start_of_turn>", "<end_of_turn>"):
		return "gemma"
	case has("<|user|>", "<|end|>"):
		return "phi3"
	case has("[INST]", "[/INST]"):
		return "mistral-v3"
	}
	switch arch {
	case "qwen2", "qwen", "qwen3":
		return "chatml"
	case "gemma", "gemma2", "gemma3":
		return "gemma"
	case "phi3":
		return "phi3"
	}
	return "llama-2"
}
