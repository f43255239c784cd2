package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/chat"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/runtime/sample"
)

// The tiny stories260K model is shared by the tests of this package:
// opening it once keeps them fast. Each test starts its own Server.
var (
	modelOnce sync.Once
	tiny      *runtime.Model
	tinyErr   error
)

func openTiny(t testing.TB) *runtime.Model {
	t.Helper()
	modelOnce.Do(func() {
		path := filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf")
		tiny, tinyErr = runtime.Open(path, runtime.Options{Threads: 1, Taps: EmbeddingTaps})
	})
	require.NoError(t, tinyErr)
	return tiny
}

// start serves a new Server on the tiny model over httptest.
func start(t testing.TB, o Options) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(openTiny(t), o)
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		require.NoError(t, s.Close())
	})
	return s, ts
}

// post sends body as JSON and returns the status and the decoded answer.
func post(t testing.TB, ts *httptest.Server, path string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		b, err = json.Marshal(v)
		require.NoError(t, err)
	}
	req, err := http.NewRequest("POST", ts.URL+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &out), "body: %s", raw)
	return resp.StatusCode, out
}

func get(t testing.TB, ts *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

// greedy is a deterministic completion request.
func greedy(prompt string, n int) map[string]any {
	return map[string]any{"prompt": prompt, "max_tokens": n, "temperature": 0, "ignore_eos": true}
}

func choiceText(t testing.TB, resp map[string]any) string {
	t.Helper()
	choices, ok := resp["choices"].([]any)
	require.True(t, ok, "no choices in %v", resp)
	require.Len(t, choices, 1)
	c := choices[0].(map[string]any)
	if msg, ok := c["message"].(map[string]any); ok {
		return msg["content"].(string)
	}
	return c["text"].(string)
}

// metric reads one unlabelled value from /metrics.
func metric(t testing.TB, ts *httptest.Server, name string) float64 {
	t.Helper()
	_, text := get(t, ts, "/metrics")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	require.NotNil(t, m, "metric %s not in:\n%s", name, text)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// reference is the model's own greedy continuation (runtime.Generate),
// which the server must reproduce.
func reference(t testing.TB, prompt string, n int) string {
	t.Helper()
	s, err := openTiny(t).NewSession(runtime.SessionOptions{})
	require.NoError(t, err)
	defer s.Close()
	res, err := s.Generate(context.Background(), prompt, runtime.GenerateOptions{MaxTokens: n, IgnoreEOS: true, ParseSpecial: true}, nil)
	require.NoError(t, err)
	return res.Text
}

func TestCompletionMatchesGenerate(t *testing.T) {
	_, ts := start(t, Options{Parallel: 2})
	status, resp := post(t, ts, "/v1/completions", greedy("Once upon a time", 40))
	require.Equal(t, http.StatusOK, status, "%v", resp)
	assert.Equal(t, reference(t, "Once upon a time", 40), choiceText(t, resp))
	assert.Equal(t, "text_completion", resp["object"])
	c := resp["choices"].([]any)[0].(map[string]any)
	assert.Equal(t, "length", c["finish_reason"])
	u := resp["usage"].(map[string]any)
	assert.EqualValues(t, 40, u["completion_tokens"])
	assert.EqualValues(t, u["prompt_tokens"].(float64)+40, u["total_tokens"])
}

// sse reads a stream's data lines.
func sse(t testing.TB, body io.Reader) []string {
	t.Helper()
	var data []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		d, ok := strings.CutPrefix(line, "data: ")
		require.True(t, ok, "line %q is not an SSE data line", line)
		data = append(data, d)
	}
	require.NoError(t, sc.Err())
	return data
}

func streamRequest(t testing.TB, ts *httptest.Server, path string, body map[string]any) []string {
	t.Helper()
	body["stream"] = true
	b, _ := json.Marshal(body)
	resp, err := ts.Client().Post(ts.URL+path, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return sse(t, resp.Body)
}

func TestCompletionStream(t *testing.T) {
	_, ts := start(t, Options{Parallel: 2})
	data := streamRequest(t, ts, "/v1/completions", greedy("Once upon a time", 24))
	require.GreaterOrEqual(t, len(data), 3)
	require.Equal(t, "[DONE]", data[len(data)-1])
	var text strings.Builder
	for i, d := range data[:len(data)-1] {
		var chunk completionResponse
		require.NoError(t, json.Unmarshal([]byte(d), &chunk), d)
		require.Len(t, chunk.Choices, 1)
		text.WriteString(chunk.Choices[0].Text)
		last := i == len(data)-2
		assert.Equal(t, last, chunk.Usage != nil, "usage only in the last chunk (%d)", i)
		assert.Equal(t, last, chunk.Choices[0].FinishReason != nil, "finish_reason only in the last chunk (%d)", i)
		if last {
			assert.Equal(t, 24, chunk.Usage.CompletionTokens)
			assert.Equal(t, "length", *chunk.Choices[0].FinishReason)
		}
	}
	assert.Equal(t, reference(t, "Once upon a time", 24), text.String())
}

func TestStopString(t *testing.T) {
	_, ts := start(t, Options{})
	full := reference(t, "Once upon a time", 40)
	// Stop at a word in the middle of the reference continuation.
	words := strings.Fields(full)
	require.Greater(t, len(words), 4)
	stop := " " + words[3]
	req := greedy("Once upon a time", 40)
	req["stop"] = []string{"zzzz", stop}
	status, resp := post(t, ts, "/v1/completions", req)
	require.Equal(t, http.StatusOK, status)
	want := full[:strings.Index(full, stop)]
	assert.Equal(t, want, choiceText(t, resp))
	assert.Equal(t, "stop", resp["choices"].([]any)[0].(map[string]any)["finish_reason"])
	// Streamed, the text held back for a possible stop string comes out
	// the same.
	var text strings.Builder
	data := streamRequest(t, ts, "/v1/completions", req)
	for _, d := range data[:len(data)-1] {
		var chunk completionResponse
		require.NoError(t, json.Unmarshal([]byte(d), &chunk))
		text.WriteString(chunk.Choices[0].Text)
	}
	assert.Equal(t, want, text.String())
}

func TestStopScan(t *testing.T) {
	j := &job{stops: []string{"abc", "xy"}}
	var out strings.Builder
	for _, p := range []string{"12a", "b", "x", "9", "ab", "c", "tail"} {
		send, stopped := j.stopScan(p)
		out.WriteString(send)
		if stopped {
			break
		}
	}
	assert.Equal(t, "12abx9", out.String())
}

func TestGreedySameAloneAndBatched(t *testing.T) {
	_, ts := start(t, Options{Parallel: 4, PrefillChunk: 8})
	prompts := []string{"Once upon a time", "The little dog", "Lily and Ben went to the park. They saw a big", "One day"}
	alone := make([]string, len(prompts))
	for i, p := range prompts {
		status, resp := post(t, ts, "/v1/completions", greedy(p, 32))
		require.Equal(t, http.StatusOK, status)
		alone[i] = choiceText(t, resp)
	}
	// Together, with different lengths so that prefill chunks and decode
	// steps interleave; the cache is cleared by different prompts first.
	var wg sync.WaitGroup
	together := make([]string, len(prompts))
	for round := 0; round < 2; round++ {
		for i, p := range prompts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, resp := post(t, ts, "/v1/completions", greedy(p, 32-4*i))
				if assert.Equal(t, http.StatusOK, status) {
					together[i] = choiceText(t, resp)
				}
			}()
		}
		wg.Wait()
		for i := range prompts {
			ref := reference(t, prompts[i], 32-4*i)
			assert.Equal(t, ref, together[i], "prompt %d beside others", i)
			assert.True(t, strings.HasPrefix(alone[i], together[i]), "prompt %d alone vs batched", i)
		}
	}
}

func TestPrefixCache(t *testing.T) {
	_, ts := start(t, Options{Parallel: 2})
	system := "Lily and Ben were friends. They liked to play in the park with their ball. One day"
	status, _ := post(t, ts, "/v1/completions", greedy(system, 8))
	require.Equal(t, http.StatusOK, status)
	hits0, reused0 := metric(t, ts, "weft_prefix_cache_hits_total"), metric(t, ts, "weft_prefix_cache_tokens_total")
	prompt := system + " the sun was hot"
	status, resp := post(t, ts, "/v1/completions", greedy(prompt, 24))
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, reference(t, prompt, 24), choiceText(t, resp))
	assert.Equal(t, hits0+1, metric(t, ts, "weft_prefix_cache_hits_total"))
	assert.Greater(t, metric(t, ts, "weft_prefix_cache_tokens_total")-reused0, 15.0)
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestChatCompletions(t *testing.T) {
	s, ts := start(t, Options{})
	require.NotNil(t, s.opts.Template, s.ChatTemplate())
	msgs := []map[string]any{
		{"role": "system", "content": "You tell stories."},
		{"role": "user", "content": []map[string]any{{"type": "text", "text": "Once upon a time"}}},
	}
	status, resp := post(t, ts, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 12, "temperature": 0, "ignore_eos": true})
	require.Equal(t, http.StatusOK, status, "%v", resp)
	assert.Equal(t, "chat.completion", resp["object"])
	msg := resp["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	assert.Equal(t, "assistant", msg["role"])
	// The same as a completion of the rendered prompt.
	prompt, err := s.opts.Template.Render([]chat.Message{{Role: "system", Content: "You tell stories."}, {Role: "user", Content: "Once upon a time"}}, true)
	require.NoError(t, err)
	status, plain := post(t, ts, "/v1/completions", greedy(prompt, 12))
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, choiceText(t, plain), msg["content"])

	data := streamRequest(t, ts, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 12, "temperature": 0, "ignore_eos": true})
	require.Equal(t, "[DONE]", data[len(data)-1])
	var text strings.Builder
	for i, d := range data[:len(data)-1] {
		var chunk chatResponse
		require.NoError(t, json.Unmarshal([]byte(d), &chunk), d)
		assert.Equal(t, "chat.completion.chunk", chunk.Object)
		delta := chunk.Choices[0].Delta
		require.NotNil(t, delta)
		if i == 0 {
			assert.Equal(t, "assistant", delta.Role)
		}
		if delta.Content != nil {
			text.WriteString(*delta.Content)
		}
	}
	assert.Equal(t, msg["content"], text.String())

	status, resp = post(t, ts, "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"content": "x"}}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "messages[0].role", errorOf(t, resp)["param"])
}

// TestPrefixCopiedFromBusySlot: a request sharing a long prefix with one
// still generating in another slot starts from a copy of its cells.
func TestPrefixCopiedFromBusySlot(t *testing.T) {
	s, ts := start(t, Options{Parallel: 2})
	s.stepHook = func([]runtime.SeqInput) { time.Sleep(time.Millisecond) }
	system := "Lily and Ben were friends. They liked to play in the park with their ball. One day"
	first := make(chan int, 1)
	go func() { status, _ := post(t, ts, "/v1/completions", greedy(system, 300)); first <- status }()
	waitFor(t, "the first request generating", func() bool { return metric(t, ts, "weft_generated_tokens_total") > 0 })
	prompt := system + " the sun was hot"
	status, resp := post(t, ts, "/v1/completions", greedy(prompt, 24))
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, reference(t, prompt, 24), choiceText(t, resp))
	assert.Equal(t, 1.0, metric(t, ts, "weft_prefix_cache_copies_total"))
	assert.Greater(t, metric(t, ts, "weft_prefix_cache_tokens_total"), 15.0)
	assert.Equal(t, 1.0, metric(t, ts, "weft_slots_busy"), "the first request still runs")
	assert.Equal(t, http.StatusOK, <-first)
}

func TestSamplingFields(t *testing.T) {
	_, ts := start(t, Options{Parallel: 2})
	// A seed makes a sampled completion repeat.
	req := map[string]any{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 1.0, "top_k": 0, "top_p": 1, "min_p": 0,
		"seed": 7, "repeat_penalty": 1.1, "repeat_last_n": -1, "presence_penalty": 0.2, "frequency_penalty": 0.1}
	_, a := post(t, ts, "/v1/completions", req)
	_, b := post(t, ts, "/v1/completions", req)
	assert.Equal(t, choiceText(t, a), choiceText(t, b))
	// logit_bias -100 bans the greedy first token.
	first := greedy("Once upon a time", 1)
	_, resp := post(t, ts, "/v1/completions", first)
	m := openTiny(t)
	sess, err := m.NewSession(runtime.SessionOptions{})
	require.NoError(t, err)
	defer sess.Close()
	ids, err := m.Tokenizer.Encode("Once upon a time", true, true)
	require.NoError(t, err)
	logits, err := sess.Eval(ids, false)
	require.NoError(t, err)
	first["logit_bias"] = map[string]any{strconv.Itoa(int(sample.Greedy(logits))): -100}
	status, banned := post(t, ts, "/v1/completions", first)
	require.Equal(t, http.StatusOK, status)
	assert.NotEqual(t, choiceText(t, resp), choiceText(t, banned))
}

// TestHeldTextSentAtEnd: text kept back because it might begin a stop
// string comes out when the request ends otherwise, on its length or on
// the end-of-sequence token.
func TestHeldTextSentAtEnd(t *testing.T) {
	_, ts := start(t, Options{Ctx: 1024})
	// On its length (greedy, 12 tokens).
	want := reference(t, "Once upon a time", 12)
	req := greedy("Once upon a time", 12)
	req["stop"] = want[len(want)-1:] + "\x00never" // begins with the text's last character
	status, resp := post(t, ts, "/v1/completions", req)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, want, choiceText(t, resp))
	// On the end-of-sequence token (finish reason "stop" without a stop
	// string; the tiny model never emits EOS, so the scheduler's finish is
	// called directly).
	srv := &Server{slots: make([]slot, 1), metrics: newMetrics(1)}
	j := &job{stops: []string{"c\x00never"}, dec: openTiny(t).Tokenizer.NewStreamDecoder(), out: newOutbox()}
	srv.slots[0].job = j
	sent, stopped := j.stopScan("abc")
	require.False(t, stopped)
	require.Equal(t, "ab", sent)
	srv.finish(j, "stop")
	var text strings.Builder
	for _, ev := range j.out.take() {
		text.WriteString(ev.Text)
	}
	assert.Equal(t, "c", text.String())
}

// TestChunkedPrefill: a long prompt arriving while another request
// decodes is prefilled PrefillChunk tokens a step, each step also
// carrying the other's next token, and both outputs stay the model's.
func TestChunkedPrefill(t *testing.T) {
	s, ts := start(t, Options{Parallel: 2, PrefillChunk: 16})
	var mu sync.Mutex
	var steps [][]runtime.SeqInput
	s.stepHook = func(in []runtime.SeqInput) {
		mu.Lock()
		steps = append(steps, slices.Clone(in))
		mu.Unlock()
		time.Sleep(500 * time.Microsecond)
	}
	first := make(chan string, 1)
	go func() {
		_, resp := post(t, ts, "/v1/completions", greedy("Once upon a time", 200))
		first <- choiceText(t, resp)
	}()
	waitFor(t, "the first request decoding", func() bool { return metric(t, ts, "weft_generated_tokens_total") > 2 })
	long := strings.Repeat("Lily and Ben went to the park and played with a ball. ", 12)
	status, resp := post(t, ts, "/v1/completions", greedy(long, 8))
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, reference(t, long, 8), choiceText(t, resp))
	assert.Equal(t, reference(t, "Once upon a time", 200), <-first)
	mu.Lock()
	defer mu.Unlock()
	mixed := 0
	for _, in := range steps {
		prefill, decode := 0, 0
		for _, x := range in {
			if len(x.Tokens) > 1 {
				prefill += len(x.Tokens)
			} else {
				decode++
			}
		}
		if prefill > 0 && decode > 0 {
			mixed++
			assert.LessOrEqual(t, prefill, 16, "prefill beside decoding stays within the chunk")
		}
	}
	assert.GreaterOrEqual(t, mixed, 8, "the long prompt was spread over steps that also decoded")
}

// TestChatTurnsReusePrefix: the second turn of a chat repeats the first
// in its prompt, and the slot's cached tokens serve it.
func TestChatTurnsReusePrefix(t *testing.T) {
	_, ts := start(t, Options{Parallel: 2})
	turn := []map[string]any{{"role": "user", "content": "Tell me a story about a dog named Max who lived in a small house."}}
	body := map[string]any{"messages": turn, "max_tokens": 16, "temperature": 0}
	status, resp := post(t, ts, "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, status, "%v", resp)
	reply := choiceText(t, resp)
	reused := metric(t, ts, "weft_prefix_cache_tokens_total")
	body["messages"] = append(turn, map[string]any{"role": "assistant", "content": reply}, map[string]any{"role": "user", "content": "And then?"})
	status, _ = post(t, ts, "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, status)
	assert.Greater(t, metric(t, ts, "weft_prefix_cache_tokens_total")-reused, 20.0, "the first turn's prompt came from the cache")
}
