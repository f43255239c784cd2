package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/runtime"
)

// errorOf checks OpenAI's error shape and returns the error object.
func errorOf(t testing.TB, resp map[string]any) map[string]any {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	require.True(t, ok, "no error object in %v", resp)
	assert.NotEmpty(t, e["message"])
	assert.NotEmpty(t, e["type"])
	return e
}

func TestErrors(t *testing.T) {
	s, ts := start(t, Options{Ctx: 256, MaxTokens: 64, MaxBodyBytes: 4096})
	ctx := s.batcher.SlotContext()
	long := strings.Repeat("the dog ran and ", ctx)
	cases := []struct {
		name   string
		path   string
		body   any
		status int
		match  string
	}{
		{"malformed JSON", "/v1/completions", `{"prompt": "x",`, 400, "malformed JSON"},
		{"wrong type", "/v1/completions", `{"prompt": "x", "max_tokens": "ten"}`, 400, "max_tokens"},
		{"no prompt", "/v1/completions", map[string]any{"max_tokens": 3}, 400, "prompt is required"},
		{"n", "/v1/completions", map[string]any{"prompt": "x", "n": 2}, 400, "n = 2"},
		{"max_tokens over the limit", "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 65}, 400, "1 to 64"},
		{"temperature", "/v1/completions", map[string]any{"prompt": "x", "temperature": -1}, 400, "temperature"},
		{"top_p", "/v1/completions", map[string]any{"prompt": "x", "top_p": 2}, 400, "top-p"},
		{"logit_bias key", "/v1/completions", map[string]any{"prompt": "x", "logit_bias": map[string]any{"99999": 1}}, 400, "logit_bias"},
		{"stop type", "/v1/completions", map[string]any{"prompt": "x", "stop": 3}, 400, "stop"},
		{"token id", "/v1/completions", map[string]any{"prompt": []int{1, 100000}}, 400, "outside the vocabulary"},
		{"two prompts", "/v1/completions", map[string]any{"prompt": []string{"a", "b"}}, 400, "one prompt"},
		{"prompt too long", "/v1/completions", map[string]any{"prompt": long[:3000]}, 400, fmt.Sprintf("context of %d tokens", ctx)},
		{"body too large", "/v1/completions", map[string]any{"prompt": strings.Repeat("x", 5000)}, 413, "limit of 4096 bytes"},
		{"no messages", "/v1/chat/completions", map[string]any{"messages": []any{}}, 0, ""},
		{"unknown route", "/v1/nothing", map[string]any{}, 404, "unknown route POST /v1/nothing"},
		{"detokenize id", "/detokenize", map[string]any{"tokens": []int{-1}}, 400, "outside the vocabulary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, resp := post(t, ts, c.path, c.body)
			if c.status == 0 { // chat: 400 with a template, 501 without
				assert.Contains(t, []int{400, 501}, status)
				errorOf(t, resp)
				return
			}
			assert.Equal(t, c.status, status, "%v", resp)
			assert.Contains(t, errorOf(t, resp)["message"], c.match)
		})
	}
	// The prompt-length error names both numbers.
	_, resp := post(t, ts, "/v1/completions", map[string]any{"prompt": long[:3000]})
	e := errorOf(t, resp)
	assert.Regexp(t, `the prompt has \d+ tokens, more than the context of \d+`, e["message"])
	assert.Equal(t, "context_length_exceeded", e["code"])
	status, _ := get(t, ts, "/v1/completions")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
}

func TestAuth(t *testing.T) {
	_, ts := start(t, Options{APIKey: "sekret"})
	status, resp := post(t, ts, "/v1/completions", greedy("Once", 2))
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, "invalid_api_key", errorOf(t, resp)["code"])
	status, _ = post(t, ts, "/v1/completions", greedy("Once", 2), "Authorization", "Bearer wrong")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, resp = post(t, ts, "/v1/completions", greedy("Once", 2), "Authorization", "Bearer sekret")
	assert.Equal(t, http.StatusOK, status, "%v", resp)
	status, _ = get(t, ts, "/v1/models")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = get(t, ts, "/health") // probes need no key
	assert.Equal(t, http.StatusOK, status)
}

func TestEndpoints(t *testing.T) {
	_, ts := start(t, Options{Embeddings: true, ModelName: "tiny"})
	status, body := get(t, ts, "/health")
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"status":"ok"}`, body)

	status, body = get(t, ts, "/v1/models")
	require.Equal(t, http.StatusOK, status)
	var models struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &models))
	assert.Equal(t, "list", models.Object)
	require.Len(t, models.Data, 1)
	assert.Equal(t, "tiny", models.Data[0].ID)

	status, resp := post(t, ts, "/tokenize", map[string]any{"content": "Once upon a time", "add_special": true})
	require.Equal(t, http.StatusOK, status)
	ids := resp["tokens"].([]any)
	require.NotEmpty(t, ids)
	status, resp = post(t, ts, "/detokenize", map[string]any{"tokens": ids[1:]}) // without BOS
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "Once upon a time", strings.TrimSpace(resp["content"].(string)))
	status, resp = post(t, ts, "/tokenize", map[string]any{"content": "Once", "with_pieces": true})
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, resp["tokens"].([]any)[0].(map[string]any), "piece")

	status, resp = post(t, ts, "/v1/embeddings", map[string]any{"input": []string{"Once upon a time", "The dog barked", "Once upon a time"}})
	require.Equal(t, http.StatusOK, status, "%v", resp)
	data := resp["data"].([]any)
	require.Len(t, data, 3)
	vec := func(i int) []float64 {
		var v []float64
		for _, x := range data[i].(map[string]any)["embedding"].([]any) {
			v = append(v, x.(float64))
		}
		return v
	}
	a, b, c := vec(0), vec(1), vec(2)
	require.Len(t, a, openTiny(t).Plan.Params.Embd)
	norm := 0.0
	for _, x := range a {
		norm += x * x
	}
	assert.InDelta(t, 1, math.Sqrt(norm), 1e-4, "unit length")
	assert.InDeltaSlice(t, a, c, 1e-6, "the same input gives the same vector")
	assert.NotEqual(t, a, b)
	assert.Greater(t, resp["usage"].(map[string]any)["prompt_tokens"], 0.0)

	_, text := get(t, ts, "/metrics")
	for _, name := range []string{"weft_requests_total{", "weft_queue_depth", "weft_time_to_first_token_seconds_bucket",
		"weft_inter_token_latency_seconds_bucket", "weft_kv_cells_used", "weft_prefix_cache_hits_total", "weft_generated_tokens_total"} {
		assert.Contains(t, text, name)
	}
}

func TestEmbeddingsOff(t *testing.T) {
	_, ts := start(t, Options{})
	status, resp := post(t, ts, "/v1/embeddings", map[string]any{"input": "x"})
	assert.Equal(t, http.StatusNotImplemented, status)
	assert.Contains(t, errorOf(t, resp)["message"], "--embeddings")
}

// block makes the scheduler wait before each step until release is
// closed, so that tests can see slots and the queue as they are.
func block(s *Server) (entered chan struct{}, release func()) {
	entered = make(chan struct{}, 1024)
	gate := make(chan struct{})
	s.stepHook = func([]runtime.SeqInput) {
		entered <- struct{}{}
		<-gate
	}
	var once sync.Once
	return entered, func() { once.Do(func() { close(gate) }) }
}

func TestQueueFull(t *testing.T) {
	s, ts := start(t, Options{Parallel: 1, QueueSize: 1})
	entered, release := block(s)
	defer release()
	results := make(chan int, 2)
	go func() { status, _ := post(t, ts, "/v1/completions", greedy("Once", 4)); results <- status }()
	<-entered // the first request is in the slot, its step held
	go func() { status, _ := post(t, ts, "/v1/completions", greedy("Twice", 4)); results <- status }()
	waitFor(t, "the queue", func() bool { return len(s.queue) == 1 })
	req, _ := http.NewRequest("POST", ts.URL+"/v1/completions", strings.NewReader(`{"prompt": "Thrice", "max_tokens": 4}`))
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "queue_full", errorOf(t, out)["code"])
	release()
	assert.Equal(t, http.StatusOK, <-results)
	assert.Equal(t, http.StatusOK, <-results)
}

func TestDisconnectFreesSlot(t *testing.T) {
	s, ts := start(t, Options{Parallel: 1})
	s.stepHook = func([]runtime.SeqInput) { time.Sleep(time.Millisecond) } // keep the stream going a while
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "max_tokens": 1000, "ignore_eos": true, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", bytes.NewReader(body))
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "data: "))
	cancel()
	resp.Body.Close()
	waitFor(t, "the slot to be freed", func() bool { return metric(t, ts, "weft_slots_busy") == 0 })
	assert.Equal(t, 1.0, metric(t, ts, "weft_requests_cancelled_total"))
	// The one slot serves the next request.
	status, _ := post(t, ts, "/v1/completions", greedy("Once", 4))
	assert.Equal(t, http.StatusOK, status)
}

func TestShutdownFinishesInFlight(t *testing.T) {
	s, ts := start(t, Options{Parallel: 2})
	entered, release := block(s)
	done := make(chan map[string]any, 1)
	go func() { _, resp := post(t, ts, "/v1/completions", greedy("Once upon a time", 16)); done <- resp }()
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	waitFor(t, "draining", s.draining.Load)
	status, resp := post(t, ts, "/v1/completions", greedy("Once", 4))
	assert.Equal(t, http.StatusServiceUnavailable, status)
	errorOf(t, resp)
	status, _ = get(t, ts, "/health")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	s.stepHook = nil
	release()
	assert.Equal(t, reference(t, "Once upon a time", 16), choiceText(t, <-done))
	require.NoError(t, <-shut)
}

func TestShutdownDeadlineCancels(t *testing.T) {
	s, ts := start(t, Options{Parallel: 1})
	entered, release := block(s)
	done := make(chan int, 1)
	go func() { status, _ := post(t, ts, "/v1/completions", greedy("Once upon a time", 16)); done <- status }()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	time.Sleep(100 * time.Millisecond) // past the deadline while the step is held
	release()
	assert.ErrorIs(t, <-shut, context.DeadlineExceeded)
	assert.Equal(t, http.StatusServiceUnavailable, <-done)
}

// TestNoLeaks runs 1 000 requests (plain, streamed, abandoned, rejected)
// and checks that goroutines and the heap come back to where they were.
func TestNoLeaks(t *testing.T) {
	s, ts := start(t, Options{Parallel: 4})
	client := ts.Client()
	run := func(i int) {
		body := greedy("Once upon a time", 1+i%8)
		switch i % 4 {
		case 1:
			body["stream"] = true
		case 2:
			body["max_tokens"] = -1 // rejected
		}
		b, _ := json.Marshal(body)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", bytes.NewReader(b))
		resp, err := client.Do(req)
		if !assert.NoError(t, err) {
			return
		}
		if i%4 == 3 && i%8 == 7 { // abandoned before reading
			cancel()
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	settle := func() (int, uint64) {
		client.CloseIdleConnections()
		waitFor(t, "idle slots", func() bool { return s.metrics.slotsBusy.Load() == 0 && s.metrics.queueDepth.Load() == 0 })
		time.Sleep(50 * time.Millisecond)
		goruntime.GC()
		goruntime.GC()
		var ms goruntime.MemStats
		goruntime.ReadMemStats(&ms)
		return goruntime.NumGoroutine(), ms.HeapAlloc
	}
	for i := range 40 { // warm up pools and buffers
		run(i)
	}
	g0, h0 := settle()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				run(i)
			}
		}()
	}
	for i := range 1000 {
		work <- i
	}
	close(work)
	wg.Wait()
	g1, h1 := settle()
	assert.LessOrEqual(t, g1, g0+2, "goroutines %d before, %d after", g0, g1)
	assert.Less(t, int64(h1)-int64(h0), int64(4<<20), "heap %d before, %d after", h0, h1)
	t.Logf("goroutines %d → %d, heap %d KiB → %d KiB", g0, g1, h0>>10, h1>>10)
}
