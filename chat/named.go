package chat

import (
	"sort"
	"strings"
)

// A namedTemplate is a built-in prompt format, written in Go so that it
// works whatever the Jinja engine can do. The formats and their names are
// llama.cpp's (llama_chat_apply_template), whose expected outputs the
// tests reproduce; the end-of-turn strings are the formats' own.
type namedTemplate struct {
	stops  []string
	render func(b *strings.Builder, msgs []Message, gen bool)
}

// aliases map the names people use to llama.cpp's.
var aliases = map[string]string{
	"llama-2": "llama2-sys-bos", // Meta's format: <<SYS>> block, BOS before every [INST]
	"mistral": "llama2",         // Mistral v0.1/v0.2: no system block
	"llama-3": "llama3", "llama3.1": "llama3",
	"phi-3": "phi3", "phi-4": "phi4",
	"qwen": "chatml", "qwen2": "chatml", "qwen2.5": "chatml",
	"command-r-plus": "command-r", "gemma2": "gemma",
}

// Names lists the built-in templates and their aliases, sorted.
func Names() []string {
	var ns []string
	for n := range named {
		ns = append(ns, n)
	}
	for n := range aliases {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// turns is the common shape of most formats: a prefix and suffix per role
// around the content, and the text that opens the assistant's turn.
type turns struct {
	pre, post map[string]string
	gen       string
	trim      bool
}

func (t turns) render(b *strings.Builder, msgs []Message, gen bool) {
	for _, m := range msgs {
		c := m.Content
		if t.trim {
			c = strings.TrimSpace(c)
		}
		pre, ok := t.pre[m.Role]
		if !ok {
			pre = t.pre["*"]
		}
		post, ok := t.post[m.Role]
		if !ok {
			post = t.post["*"]
		}
		b.WriteString(strings.ReplaceAll(pre, "{role}", m.Role))
		b.WriteString(c)
		b.WriteString(post)
	}
	if gen {
		b.WriteString(t.gen)
	}
}

// same is a prefix/suffix table with one entry for every role.
func same(s string) map[string]string { return map[string]string{"*": s} }

func simple(stops []string, t turns) namedTemplate {
	return namedTemplate{stops: stops, render: t.render}
}

var named = map[string]namedTemplate{
	"chatml": simple([]string{"<|im_end|>"}, turns{pre: same("<|im_start|>{role}\n"), post: same("<|im_end|>\n"), gen: "<|im_start|>assistant\n"}),
	"llama3": simple([]string{"<|eot_id|>"}, turns{pre: same("<|start_header_id|>{role}<|end_header_id|>\n\n"), post: same("<|eot_id|>"),
		gen: "<|start_header_id|>assistant<|end_header_id|>\n\n", trim: true}),
	"phi3": simple([]string{"<|end|>", "<|endoftext|>"}, turns{pre: same("<|{role}|>\n"), post: same("<|end|>\n"), gen: "<|assistant|>\n"}),
	"phi4": simple([]string{"<|im_end|>"}, turns{pre: same("<|im_start|>{role}<|im_sep|>"), post: same("<|im_end|>"), gen: "<|im_start|>assistant<|im_sep|>"}),
	"megrez": simple([]string{"<|turn_end|>"}, turns{pre: same("<|role_start|>{role}<|role_end|>"), post: same("<|turn_end|>"),
		gen: "<|role_start|>assistant<|role_end|>"}),
	"granite": simple([]string{"<|end_of_text|>"}, turns{pre: same("<|start_of_role|>{role}<|end_of_role|>"), post: same("<|end_of_text|>\n"),
		gen: "<|start_of_role|>assistant<|end_of_role|>\n"}),
	"mistral-v7": simple([]string{"</s>"}, turns{
		pre:  map[string]string{"system": "[SYSTEM_PROMPT] ", "user": "[INST] ", "*": " "},
		post: map[string]string{"system": "[/SYSTEM_PROMPT]", "user": "[/INST]", "*": "</s>"}}),
	"openchat": simple([]string{"<|end_of_turn|>"}, turns{
		pre:  map[string]string{"system": "", "user": "GPT4 Correct User: ", "*": "GPT4 Correct Assistant: "},
		post: same("<|end_of_turn|>"), gen: "GPT4 Correct Assistant:"}),
	"vicuna": simple([]string{"</s>"}, turns{
		pre:  map[string]string{"system": "", "user": "USER: ", "*": "ASSISTANT: "},
		post: map[string]string{"system": "\n\n", "user": "\n", "*": "</s>\n"}, gen: "ASSISTANT:"}),
	"vicuna-orca": simple([]string{"</s>"}, turns{
		pre:  map[string]string{"system": "SYSTEM: ", "user": "USER: ", "*": "ASSISTANT: "},
		post: map[string]string{"system": "\n", "user": "\n", "*": "</s>\n"}, gen: "ASSISTANT:"}),
	"deepseek": simple([]string{"<|EOT|>"}, turns{
		pre:  map[string]string{"system": "", "user": "### Instruction:\n", "*": "### Response:\n"},
		post: map[string]string{"system": "", "user": "\n", "*": "\n<|EOT|>\n"}, gen: "### Response:\n"}),
	"deepseek2": simple([]string{"<｜end▁of▁sentence｜>"}, turns{
		pre:  map[string]string{"system": "", "user": "User: ", "*": "Assistant: "},
		post: map[string]string{"system": "\n\n", "user": "\n\n", "*": "<｜end▁of▁sentence｜>"}, gen: "Assistant:"}),
	"command-r": simple([]string{"<|END_OF_TURN_TOKEN|>"}, turns{
		pre: map[string]string{"system": "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "user": "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>",
			"*": "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
		post: same("<|END_OF_TURN_TOKEN|>"), gen: "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", trim: true}),
	"minicpm": simple([]string{"<用户>"}, turns{pre: map[string]string{"user": "<用户>", "*": ""},
		post: map[string]string{"user": "<AI>", "*": ""}, trim: true}),
	"chatglm3":          {stops: []string{"<|user|>", "<|observation|>"}, render: prefixed("[gMASK]sop", "<|{role}|>\n ")},
	"chatglm4":          {stops: []string{"<|user|>", "<|observation|>"}, render: prefixed("[gMASK]<sop>", "<|{role}|>\n")},
	"glmedge":           {stops: []string{"<|user|>"}, render: prefixed("", "<|{role}|>\n")},
	"monarch":           {stops: []string{"</s>"}, render: monarch},
	"gemma":             {stops: []string{"<end_of_turn>"}, render: gemma},
	"orion":             {stops: []string{"</s>"}, render: orion},
	"gigachat":          {stops: []string{"<|message_sep|>"}, render: gigachat},
	"llama2":            {stops: []string{"</s>"}, render: llama2{}.render},
	"llama2-sys":        {stops: []string{"</s>"}, render: llama2{sys: true}.render},
	"llama2-sys-bos":    {stops: []string{"</s>"}, render: llama2{sys: true, bos: true}.render},
	"llama2-sys-strip":  {stops: []string{"</s>"}, render: llama2{sys: true, strip: true}.render},
	"mistral-v1":        {stops: []string{"</s>"}, render: mistral{inst: " [INST] ", close: " [/INST]", reply: " "}.render},
	"mistral-v3":        {stops: []string{"</s>"}, render: mistral{inst: "[INST] ", close: "[/INST]", reply: " ", trim: true}.render},
	"mistral-v3-tekken": {stops: []string{"</s>"}, render: mistral{inst: "[INST]", close: "[/INST]"}.render},
}

// prefixed writes head, then each message as its role tag and content;
// the generation prompt is the assistant's tag (the GLM family).
func prefixed(head, tag string) func(*strings.Builder, []Message, bool) {
	return func(b *strings.Builder, msgs []Message, gen bool) {
		b.WriteString(head)
		for _, m := range msgs {
			b.WriteString(strings.ReplaceAll(tag, "{role}", m.Role) + m.Content)
		}
		if gen {
			b.WriteString("<|assistant|>")
		}
	}
}

func monarch(b *strings.Builder, msgs []Message, gen bool) {
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("<s>")
		}
		b.WriteString(m.Role + "\n" + m.Content + "</s>\n")
	}
	if gen {
		b.WriteString("<s>assistant\n")
	}
}

// gemma has no system role: the system text opens the next user turn.
func gemma(b *strings.Builder, msgs []Message, gen bool) {
	sys := ""
	for _, m := range msgs {
		c := strings.TrimSpace(m.Content)
		switch m.Role {
		case "system":
			sys += c + "\n\n"
			continue
		case "assistant":
			b.WriteString("<start_of_turn>model\n")
		default:
			b.WriteString("<start_of_turn>" + m.Role + "\n" + sys)
			sys = ""
		}
		b.WriteString(c + "<end_of_turn>\n")
	}
	if gen {
		b.WriteString("<start_of_turn>model\n")
	}
}

// orion folds the system text into the next user turn, as gemma does.
func orion(b *strings.Builder, msgs []Message, gen bool) {
	sys := ""
	for _, m := range msgs {
		switch m.Role {
		case "system":
			sys += m.Content + "\n\n"
		case "user":
			b.WriteString("Human: " + sys + m.Content + "\n\nAssistant: </s>")
			sys = ""
		default:
			b.WriteString(m.Content + "</s>")
		}
	}
}

func gigachat(b *strings.Builder, msgs []Message, gen bool) {
	b.WriteString("<s>")
	for i, m := range msgs {
		switch {
		case i == 0 && m.Role == "system":
			b.WriteString(m.Content + "<|message_sep|>")
		case m.Role == "user":
			b.WriteString("user<|role_sep|>" + m.Content + "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>")
		default:
			b.WriteString(m.Role + "<|role_sep|>" + m.Content + "<|message_sep|>")
		}
	}
	if gen {
		b.WriteString("assistant<|role_sep|>")
	}
}

// llama2 is Meta's [INST] format and its variants: a <<SYS>> block for
// the system text (else the text and a newline), BOS before every later
// [INST], contents stripped.
type llama2 struct{ sys, bos, strip bool }

func (l llama2) render(b *strings.Builder, msgs []Message, gen bool) {
	open := false // an [INST] is open
	for i, m := range msgs {
		c := m.Content
		if l.strip {
			c = strings.TrimSpace(c)
		}
		if !open && m.Role != "assistant" {
			if l.bos && i > 0 {
				b.WriteString("<s>")
			}
			b.WriteString("[INST] ")
			open = true
		}
		switch m.Role {
		case "system":
			if l.sys {
				b.WriteString("<<SYS>>\n" + c + "\n<</SYS>>\n\n")
			} else {
				b.WriteString(c + "\n")
			}
		case "user":
			b.WriteString(c + " [/INST]")
			open = false
		default:
			b.WriteString(c + "</s>")
		}
	}
}

// mistral is Mistral's v1/v3/tekken format: the system text opens the
// first [INST], replies follow [/INST] after the reply separator.
type mistral struct {
	inst, close, reply string
	trim               bool
}

func (s mistral) render(b *strings.Builder, msgs []Message, gen bool) {
	open := false
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.WriteString(s.inst + m.Content + "\n\n")
			open = true
		case "user":
			if !open {
				b.WriteString(s.inst)
			}
			b.WriteString(m.Content + s.close)
			open = false
		default:
			c := m.Content
			if s.trim {
				c = strings.TrimSpace(c)
			}
			b.WriteString(s.reply + c + "</s>")
		}
	}
}

// detect names the built-in template a Jinja source most likely spells,
// by its marker strings ("" when none fits). It serves files whose
// template does not parse.
func detect(src string) string {
	has := func(s ...string) bool {
		for _, x := range s {
			if !strings.Contains(src, x) {
				return false
			}
		}
		return true
	}
	switch {
	case has("<|start_header_id|>", "<|eot_id|>"):
		return "llama3"
	case has("<|im_sep|>"):
		return "phi4"
	case has("<|im_start|>"):
		return "chatml"
	case has("<start_of_turn>"):
		return "gemma"
	case has("[SYSTEM_PROMPT]"):
		return "mistral-v7"
	case has("<|user|>", "<|end|>"):
		return "phi3"
	case has("<<SYS>>", "[INST]"):
		return "llama2-sys"
	case has("[INST]"):
		return "llama2"
	case has("<|START_OF_TURN_TOKEN|>"):
		return "command-r"
	case has("<|start_of_role|>"):
		return "granite"
	}
	return ""
}
