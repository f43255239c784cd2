package chat

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/runtime"
)

// stories260K has no chat template: FromModel falls back to llama-2 and
// says so.
func TestFromModelFallback(t *testing.T) {
	m, err := runtime.Open("../testdata/stories260K.gguf", runtime.Options{Threads: 1})
	require.NoError(t, err)
	defer m.Close()
	tm, err := FromModel(m)
	require.NoError(t, err)
	assert.Contains(t, tm.Name(), "llama-2 (fallback: the file has no tokenizer.chat_template")
	out, err := tm.Render([]Message{{"user", "Hi"}}, true)
	require.NoError(t, err)
	assert.Equal(t, "[INST] Hi [/INST]", out)
	assert.Equal(t, []string{"</s>"}, tm.Stops())
}

func TestFromModelNil(t *testing.T) {
	_, err := FromModel(nil)
	require.Error(t, err)
}

func TestGuess(t *testing.T) {
	vocab := func(toks ...string) func(string) (int32, bool) {
		return func(s string) (int32, bool) {
			for i, x := range toks {
				if x == s {
					return int32(i), true
				}
			}
			return 0, false
		}
	}
	assert.Equal(t, "chatml", guess("llama", vocab("<|im_start|>", "<|im_end|>")))
	assert.Equal(t, "llama3", guess("llama", vocab("<|start_header_id|>", "<|eot_id|>")))
	assert.Equal(t, "gemma", guess("gemma", vocab()))
	assert.Equal(t, "chatml", guess("qwen2", vocab()))
	assert.Equal(t, "llama-2", guess("llama", vocab()))
}

func TestParseRefusesWhatDoesNotRender(t *testing.T) {
	_, err := Parse("{{ messages|nosuchfilter }}", "", "")
	require.ErrorContains(t, err, "does not render a user message")
	_, err = Parse("{% for %}", "", "")
	require.ErrorContains(t, err, "parsing the Jinja template")
	tm, err := Parse("{{ raise_exception('only at render') if messages|length > 1 }}ok", "", "")
	require.NoError(t, err)
	_, err = tm.Render([]Message{{"user", "a"}, {"user", "b"}}, true)
	require.ErrorContains(t, err, "only at render")
}

// A template that loops forever is stopped by the limits with an error.
func TestRenderHostile(t *testing.T) {
	tm, err := Parse("{% if messages|length > 1 %}{% for i in range(1000000000) %}{% endfor %}{% endif %}x", "", "")
	require.NoError(t, err)
	_, err = tm.Render([]Message{{"user", "a"}, {"user", "b"}}, true)
	require.ErrorContains(t, err, "exceeded its limits")
}

func TestStopsFromSource(t *testing.T) {
	tm, err := Parse("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}", "", "<|endoftext|>")
	require.NoError(t, err)
	assert.Equal(t, []string{"<|im_end|>", "<|endoftext|>"}, tm.Stops())
	assert.Equal(t, "jinja", tm.Name())
}

func TestMergeSystem(t *testing.T) {
	got := mergeSystem([]Message{{"system", "A"}, {"system", "B"}, {"user", "u"}, {"assistant", "x"}, {"user", ""}})
	assert.Equal(t, []Message{{"user", "A\nB\nu"}, {"assistant", "x"}, {"user", ""}}, got)
	got = mergeSystem([]Message{{"system", "S"}, {"assistant", "x"}, {"system", "T"}})
	assert.Equal(t, []Message{{"user", "S"}, {"assistant", "x"}, {"user", "T"}}, got, "system text before a reply or at the end stands as a user message")
}

// withTemplate writes a copy of stories260K whose metadata carries the
// given chat template.
func withTemplate(t *testing.T, src string) string {
	f, err := gguf.Open("../testdata/stories260K.gguf")
	require.NoError(t, err)
	defer f.Close()
	kv := append(append([]gguf.KV(nil), f.KV...), gguf.KV{Key: "tokenizer.chat_template", Value: gguf.ValueOf(src)})
	var ts []gguf.TensorSpec
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		ts = append(ts, gguf.TensorSpec{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: f.TensorData(ti)})
	}
	path := filepath.Join(t.TempDir(), "stories-chat.gguf")
	require.NoError(t, gguf.WriteFile(path, kv, ts))
	return path
}

// A file's own template is rendered as Jinja with the tokenizer's BOS and
// EOS; one that does not parse falls back to the format it spells.
func TestFromModelJinja(t *testing.T) {
	src := "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
		"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
	m, err := runtime.Open(withTemplate(t, src), runtime.Options{Threads: 1})
	require.NoError(t, err)
	defer m.Close()
	tm, err := FromModel(m)
	require.NoError(t, err)
	assert.Equal(t, "jinja (the file's tokenizer.chat_template)", tm.Name())
	out, err := tm.Render([]Message{{"user", "Hi"}}, true)
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", out, "the leading BOS (<s>) is cut")
	assert.Equal(t, []string{"<|im_end|>", "</s>"}, tm.Stops())

	broken, err := runtime.Open(withTemplate(t, "{% for m in messages %}<|im_start|>{{ m.role | nosuchfilter }}{% endfor %}"), runtime.Options{Threads: 1})
	require.NoError(t, err)
	defer broken.Close()
	tm, err = FromModel(broken)
	require.NoError(t, err)
	assert.Contains(t, tm.Name(), "chatml (fallback: the file's tokenizer.chat_template did not parse")
}

// A Template serves concurrent renderings (the server renders requests
// in parallel).
func TestRenderConcurrently(t *testing.T) {
	tm, err := Parse("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ m.role }}{% endfor %}{{ ns.n }}", "", "")
	require.NoError(t, err)
	named, err := Named("llama-3")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				out, err := tm.Render([]Message{{"user", "a"}, {"assistant", "b"}}, true)
				assert.NoError(t, err)
				assert.Equal(t, "userassistant2", out)
				_, err = named.Render([]Message{{"user", "a"}}, true)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}
