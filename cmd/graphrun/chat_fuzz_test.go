package main

import (
	"strings"
	"testing"

	"github.com/google/shlex"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/runtime/sample"
)

// FuzzChatInput: any input lines go through the multi-line collector and
// the command splitter without a panic, and a message is the input's own
// text.
func FuzzChatInput(f *testing.F) {
	f.Add("hello\n\"\"\"\na\nb\"\"\"\n/set system \"x y\"\n/set stop 'a b' c")
	f.Add("\"\"\"one\"\"\"\n/save \"unterminated")
	f.Fuzz(func(t *testing.T, input string) {
		var acc []string
		in := false
		for _, line := range strings.Split(input, "\n") {
			text, done, more := multiline(line, in, &acc)
			in = more
			if done && strings.HasPrefix(strings.TrimSpace(text), "/") {
				shlex.Split(text)
			}
			if done && len(text) > len(input) {
				t.Fatalf("message %q longer than the input", text)
			}
		}
	})
}

// FuzzParseSaved: /load takes any file without a panic, and what it
// accepts the sampler accepts.
func FuzzParseSaved(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}],"parameters":{"temperature":0.7,"top_k":20}}`))
	f.Add([]byte(`{"parameters":{"top_p":7}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, p, err := parseSaved(data, chatParams{Sampling: sample.DefaultParams()}, 512)
		if err == nil {
			_, err = sample.New(p.Sampling, 512)
			require.NoError(t, err)
		}
	})
}
