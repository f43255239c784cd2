package serve

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// histogram is a Prometheus histogram with fixed upper bounds (seconds).
type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(d time.Duration) {
	v := d.Seconds()
	i := sort.SearchFloat64s(h.bounds, v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.n++
	h.mu.Unlock()
}

func (h *histogram) write(w io.Writer, name, help string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%g\"} %d\n", name, b, cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, h.n, name, h.sum, name, h.n)
}

// metrics are the server's counters, written as Prometheus text by
// /metrics. Counters are atomics so that handlers and the scheduler
// update them without a lock.
type metrics struct {
	mu       sync.Mutex
	requests map[[2]string]uint64 // (endpoint, status code)

	promptTokens    atomic.Uint64
	generatedTokens atomic.Uint64
	steps           atomic.Uint64
	stepTokens      atomic.Uint64
	prefixLookups   atomic.Uint64
	prefixHits      atomic.Uint64
	prefixTokens    atomic.Uint64 // prompt tokens not recomputed thanks to the cache
	prefixCopies    atomic.Uint64 // hits whose cells were copied from another slot
	contextShifts   atomic.Uint64 // slots shifted because they filled (Options.ContextShift)
	cancelled       atomic.Uint64 // requests whose client went away
	queueDepth      atomic.Int64
	slotsBusy       atomic.Int64
	kvUsed          atomic.Int64
	kvTotal         int64

	ttft  *histogram
	token *histogram
	queue *histogram
}

func newMetrics(kvTotal int) *metrics {
	lat := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	return &metrics{
		requests: map[[2]string]uint64{},
		kvTotal:  int64(kvTotal),
		ttft:     newHistogram(lat...),
		token:    newHistogram(lat...),
		queue:    newHistogram(lat...),
	}
}

func (m *metrics) request(endpoint string, status int) {
	m.mu.Lock()
	m.requests[[2]string{endpoint, fmt.Sprint(status)}]++
	m.mu.Unlock()
}

func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	fmt.Fprintf(w, "# HELP weft_requests_total HTTP requests answered, by endpoint and status.\n# TYPE weft_requests_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(w, "weft_requests_total{endpoint=%q,code=%q} %d\n", k[0], k[1], m.requests[k])
	}
	m.mu.Unlock()
	counter := func(name, help string, v uint64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
	}
	counter("weft_prompt_tokens_total", "Prompt tokens of generation requests (reused ones included).", m.promptTokens.Load())
	counter("weft_generated_tokens_total", "Tokens generated.", m.generatedTokens.Load())
	counter("weft_steps_total", "Batcher steps run.", m.steps.Load())
	counter("weft_step_tokens_total", "Tokens evaluated by all steps (prefill and decode).", m.stepTokens.Load())
	counter("weft_prefix_cache_lookups_total", "Requests placed in a slot.", m.prefixLookups.Load())
	counter("weft_prefix_cache_hits_total", "Requests that reused KV cells of a cached prefix.", m.prefixHits.Load())
	counter("weft_prefix_cache_tokens_total", "Prompt tokens taken from the prefix cache instead of computed.", m.prefixTokens.Load())
	counter("weft_prefix_cache_copies_total", "Prefix hits whose KV cells were copied from another slot.", m.prefixCopies.Load())
	counter("weft_context_shifts_total", "Context shifts of slots that filled (--context-shift).", m.contextShifts.Load())
	counter("weft_requests_cancelled_total", "Generations stopped because the client went away.", m.cancelled.Load())
	gauge("weft_queue_depth", "Requests waiting for a slot.", m.queueDepth.Load())
	gauge("weft_slots_busy", "Slots generating for a request.", m.slotsBusy.Load())
	gauge("weft_kv_cells_used", "KV cache cells holding tokens, over all slots (cached prefixes included).", m.kvUsed.Load())
	gauge("weft_kv_cells_total", "KV cache cells of all slots.", m.kvTotal)
	m.ttft.write(w, "weft_time_to_first_token_seconds", "From a request's arrival to its first generated token.")
	m.token.write(w, "weft_inter_token_latency_seconds", "Between two generated tokens of a request.")
	m.queue.write(w, "weft_queue_wait_seconds", "From a request's arrival to its placement in a slot.")
}
