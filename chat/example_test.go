package chat_test

import (
	"fmt"

	"github.com/weft-ml/weft/chat"
)

func ExampleNamed() {
	t, err := chat.Named("chatml")
	if err != nil {
		panic(err)
	}
	prompt, err := t.Render([]chat.Message{
		{Role: "system", Content: "You are brief."},
		{Role: "user", Content: "Hello"},
	}, true)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n%q\n", prompt, t.Stops())
	// Output:
	// "<|im_start|>system\nYou are brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
	// ["<|im_end|>"]
}

func ExampleParse() {
	// A template without a system role: the system text joins the user's.
	src := `{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]` +
		`{% elif m.role == 'assistant' %}{{ m.content }}{{ eos_token }}{% endif %}{% endfor %}`
	t, err := chat.Parse(src, "<s>", "</s>")
	if err != nil {
		panic(err)
	}
	prompt, err := t.Render([]chat.Message{
		{Role: "system", Content: "Answer in French."},
		{Role: "user", Content: "Hi"},
	}, true)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", prompt)
	// Output:
	// "[INST] Answer in French.\nHi [/INST]"
}
