package chat

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conformanceCase is one test case of llama.cpp's test-chat-template.cpp
// (see testdata/README.md).
type conformanceCase struct {
	Name, Template     string
	Expected           string // llama.cpp's built-in formatter
	ExpectedJinja      string `json:"expected_jinja"` // its Jinja path, when it differs
	BOS                string `json:"bos"`
	EOS                string `json:"eos"`
	SupportedWithJinja bool   `json:"supported_with_jinja"`
}

// conversation is the test's conversation.
var conversation = []Message{
	{"system", "You are a helpful assistant"},
	{"user", "Hello"},
	{"assistant", "Hi there"},
	{"user", "Who are you"},
	{"assistant", "   I am an assistant   "},
	{"user", "Another question"},
}

func loadConformance(t *testing.T) []conformanceCase {
	b, err := os.ReadFile("testdata/conformance.json")
	require.NoError(t, err)
	var cs []conformanceCase
	require.NoError(t, json.Unmarshal(b, &cs))
	require.Len(t, cs, 30)
	return cs
}

// builtinFor names the built-in template llama.cpp's detection picks for
// each case (its expected_output is that template's output).
var builtinFor = map[string]string{
	"teknium/OpenHermes-2.5-Mistral-7B":                    "chatml",
	"mistralai/Mistral-7B-Instruct-v0.2 (NOTE: Old pre-v1": "mistral",
	"TheBloke/FusionNet_34Bx2_MoE-AWQ":                     "llama-2",
	"bofenghuang/vigogne-2-70b-chat":                       "llama2-sys-strip",
	"mlabonne/AlphaMonarch-7B":                             "monarch",
	"google/gemma-7b-it":                                   "gemma",
	"OrionStarAI/Orion-14B-Chat":                           "orion",
	"openchat/openchat-3.5-0106":                           "openchat",
	"deepseek-ai/deepseek-coder-33b-instruct":              "deepseek",
	"eachadea/vicuna-13b-1.1":                              "vicuna",
	"Orca-Vicuna":                                          "vicuna-orca",
	"CohereForAI/c4ai-command-r-plus":                      "command-r",
	"Llama-3":                                              "llama-3",
	"Phi-3-mini":                                           "phi-3",
	"Phi-3-small":                                          "phi-3",
	"Phi-3-medium":                                         "phi-3",
	"Phi-3-vision":                                         "phi-3",
	"ChatGLM3":                                             "chatglm3",
	"ChatGLM4":                                             "chatglm4",
	"GLMEdge":                                              "glmedge",
	"MiniCPM-3B-OpenHermes-2.5-v2-GGUF":                    "minicpm",
	"DeepSeek-V2":                                          "deepseek2",
	"ibm-granite/granite-3.0-8b-instruct":                  "granite",
	"mistralai/Mistral-7B-Instruct-v0.2 (mistralai 'v1'": "mistral-v1",
	"Mistral-Large-Instruct-2407 (mistralai 'v3'":        "mistral-v3",
	"Mistral-Nemo-Instruct-2407 (mistralai 'v3-tekken'":  "mistral-v3-tekken",
	"mistralai/Mistral-Large-Instruct-2411":              "mistral-v7",
	"ai-sage/GigaChat-20B-A3B-instruct":                  "gigachat",
	"Infinigence/Megrez-3B-Instruct":                     "megrez",
	"phi-4":                                              "phi-4",
}

func builtinName(t *testing.T, c conformanceCase) string {
	for prefix, name := range builtinFor {
		if strings.HasPrefix(c.Name, prefix) {
			return name
		}
	}
	t.Fatalf("no built-in template for %q", c.Name)
	return ""
}

// TestNamedConformance: every case's expected_output reproduces through
// the built-in template llama.cpp would have chosen.
func TestNamedConformance(t *testing.T) {
	for _, c := range loadConformance(t) {
		t.Run(c.Name, func(t *testing.T) {
			tm, err := Named(builtinName(t, c))
			require.NoError(t, err)
			out, err := tm.Render(conversation, true)
			require.NoError(t, err)
			assert.Equal(t, c.Expected, out)
		})
	}
}

// formatSingle is llama.cpp's common_chat_format_single: the text one new
// message adds to a rendered conversation (a newline kept where the past
// ended in one).
func formatSingle(t *testing.T, tm *Template, past []Message, msg Message, gen bool) string {
	var prev string
	if len(past) > 0 {
		var err error
		prev, err = tm.Render(past, false)
		require.NoError(t, err)
	}
	full, err := tm.Render(append(append([]Message(nil), past...), msg), gen)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(full, prev), "rendering must extend the past: %q then %q", prev, full)
	nl := ""
	if gen && strings.HasSuffix(prev, "\n") {
		nl = "\n"
	}
	return nl + full[len(prev):]
}

// TestFormatSingle: the system-message and new-message checks at the end
// of test-chat-template.cpp.
func TestFormatSingle(t *testing.T) {
	sys := Message{"system", "You are a helpful assistant"}
	for name, want := range map[string]string{
		"chatml":            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n",
		"mistral-v1":        " [INST] You are a helpful assistant\n\n",
		"mistral-v3":        "[INST] You are a helpful assistant\n\n",
		"mistral-v3-tekken": "[INST]You are a helpful assistant\n\n",
		"mistral-v7":        "[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT]",
		"llama2":            "[INST] You are a helpful assistant\n",
		"llama2-sys":        "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\n",
		"mistral":           "[INST] You are a helpful assistant\n",
		"gemma":             "",
		"llama3":            "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>",
		"gigachat":          "<s>You are a helpful assistant<|message_sep|>",
	} {
		tm, err := Named(name)
		require.NoError(t, err)
		assert.Equal(t, want, formatSingle(t, tm, nil, sys, false), name)
	}
	past := []Message{sys, {"user", "Hello"}, {"assistant", "I am assistant"}}
	msg := Message{"user", "How are you"}
	for name, want := range map[string]string{
		"chatml":            "\n<|im_start|>user\nHow are you<|im_end|>\n<|im_start|>assistant\n",
		"mistral-v1":        " [INST] How are you [/INST]",
		"mistral-v3":        "[INST] How are you[/INST]",
		"mistral-v3-tekken": "[INST]How are you[/INST]",
		"mistral-v7":        "[INST] How are you[/INST]",
		"llama2":            "[INST] How are you [/INST]",
		"mistral":           "[INST] How are you [/INST]",
		"gemma":             "\n<start_of_turn>user\nHow are you<end_of_turn>\n<start_of_turn>model\n",
		"llama3":            "<|start_header_id|>user<|end_header_id|>\n\nHow are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		"gigachat":          "user<|role_sep|>How are you<|message_sep|>available functions<|role_sep|>[]<|message_sep|>assistant<|role_sep|>",
	} {
		tm, err := Named(name)
		require.NoError(t, err)
		assert.Equal(t, want, formatSingle(t, tm, past, msg, true), name)
	}
}

func TestNamedUnknown(t *testing.T) {
	_, err := Named("no-such-template")
	require.ErrorIs(t, err, ErrUnknownTemplate)
	for _, n := range []string{"llama-2", "llama-3", "chatml", "phi-3", "gemma", "mistral"} {
		tm, err := Named(n)
		require.NoError(t, err, n)
		assert.NotEmpty(t, tm.Stops(), n)
	}
}

// TestJinjaConformance: every case the Jinja path supports reproduces
// llama.cpp's Jinja output (expected_jinja, or expected where equal).
func TestJinjaConformance(t *testing.T) {
	for _, c := range loadConformance(t) {
		if !c.SupportedWithJinja {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			tm, err := Parse(c.Template, c.BOS, c.EOS)
			require.NoError(t, err)
			out, err := tm.Render(conversation, true)
			require.NoError(t, err)
			want := c.ExpectedJinja
			if want == "" {
				want = c.Expected
			}
			assert.Equal(t, want, out)
		})
	}
}
