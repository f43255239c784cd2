package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-ml/weft/chat"
	"github.com/weft-ml/weft/runtime"
)

// Options configure a Server. Zero values take the defaults in brackets.
type Options struct {
	ModelName    string // the id /v1/models lists [the weights' file name]
	Parallel     int    // slots: requests generating at once [4]
	Ctx          int    // KV cache positions of each slot [the plan's context]
	KVType       string // "f16" or "f32" [the plan's]
	QueueSize    int    // requests waiting for a slot before 503 [4 × Parallel]
	PrefillChunk int    // prompt tokens a step takes while others decode [128]
	MaxTokens    int    // the largest max_tokens a request may ask [the slot context]
	MaxBodyBytes int64  // request body limit [8 MiB]
	APIKey       string // when set, requests need "Authorization: Bearer APIKey"
	// ContextShift makes a request whose slot fills go on, as llama-server
	// does: the slot keeps its first Keep prompt tokens (besides BOS; -1:
	// the whole prompt; a request's n_keep overrides it), discards half of
	// the rest and moves the others down (runtime.Batcher.Shift). Without
	// it a request ends with finish_reason "length" when its slot is full.
	ContextShift bool
	Keep         int
	// Embeddings enables /v1/embeddings; the model must have been opened
	// with runtime.Options{Taps: EmbeddingTaps}. Pooling is "mean" (the
	// default) or "last".
	Embeddings bool
	Pooling    string
	// Template renders chat messages into a prompt for
	// /v1/chat/completions [chat.FromModel: the GGUF's template, or a
	// built-in one chosen for the model].
	Template *chat.Template
}

func (o *Options) defaults(m *runtime.Model) {
	if o.ModelName == "" {
		o.ModelName = strings.TrimSuffix(filepath.Base(m.Plan.Model.Path), filepath.Ext(m.Plan.Model.Path))
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4 * o.Parallel
	}
	if o.PrefillChunk <= 0 {
		o.PrefillChunk = 128
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 8 << 20
	}
	if o.Pooling == "" {
		o.Pooling = "mean"
	}
}

// Server is the HTTP server of one model. Its handler may be served by
// any number of connections; one scheduler goroutine runs the model.
type Server struct {
	model   *runtime.Model
	opts    Options
	batcher *runtime.Batcher
	slots   []slot
	mux     *http.ServeMux
	metrics *metrics
	created int64
	ids     atomic.Uint64

	queue    chan *job
	embeds   chan *embedJob
	embedder *embedder
	chatErr  error // why there is no chat template

	runCtx    context.Context // the Batcher's steps; cancelled by Close
	cancelRun context.CancelFunc
	draining  atomic.Bool   // Shutdown began: new requests get 503
	stopping  chan struct{} // closed by Shutdown: end when the work is done
	abort     chan struct{} // closed at Shutdown's deadline: fail the rest
	done      chan struct{} // closed when the scheduler has ended
	closeOnce sync.Once
	stopOnce  sync.Once
	abortOnce sync.Once

	copyPrefix bool                        // the backend copies KV cells between slots (until it fails once)
	stepHook   func(in []runtime.SeqInput) // tests: runs before every Batcher step
}

// New starts a server on m (which it does not close).
func New(m *runtime.Model, o Options) (*Server, error) {
	o.defaults(m)
	b, err := m.NewBatcher(runtime.BatcherOptions{Slots: o.Parallel, SlotCtx: o.Ctx, KVType: o.KVType})
	if err != nil {
		return nil, err
	}
	if o.Parallel > b.MaxTokens() {
		b.Close()
		return nil, fmt.Errorf("serve: %d slots but a step takes at most %d tokens", o.Parallel, b.MaxTokens())
	}
	if o.MaxTokens <= 0 || o.MaxTokens > b.SlotContext() && !o.ContextShift {
		o.MaxTokens = b.SlotContext()
	}
	if o.Keep < -1 {
		b.Close()
		return nil, fmt.Errorf("serve: keep %d: want -1 (the whole prompt) or a number of tokens", o.Keep)
	}
	s := &Server{
		model: m, opts: o, batcher: b, slots: make([]slot, o.Parallel),
		metrics: newMetrics(o.Parallel * b.SlotContext()), created: time.Now().Unix(),
		copyPrefix: true, queue: make(chan *job, o.QueueSize), embeds: make(chan *embedJob, o.QueueSize),
		stopping: make(chan struct{}), abort: make(chan struct{}), done: make(chan struct{}),
	}
	if o.Embeddings {
		if s.embedder, err = newEmbedder(m, o.Pooling, b.SlotContext()); err != nil {
			b.Close()
			return nil, err
		}
	}
	if s.opts.Template == nil {
		// Without a template the other endpoints still serve; chat
		// requests are answered with the reason.
		s.opts.Template, s.chatErr = chat.FromModel(m)
	}
	s.runCtx, s.cancelRun = context.WithCancel(context.Background())
	s.routes()
	go s.loop()
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s }

// ServeHTTP checks the API key, limits the body and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.APIKey != "" && r.URL.Path != "/health" && !s.authorized(r) {
		s.metrics.request("auth", http.StatusUnauthorized)
		writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
			Message: "missing or wrong API key: send the header Authorization: Bearer KEY"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	s.mux.ServeHTTP(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.opts.APIKey)) == 1
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	routes := []struct {
		method, path string
		h            http.HandlerFunc
	}{
		{"POST", "/v1/completions", s.endpoint("completions", s.completions)},
		{"POST", "/v1/chat/completions", s.endpoint("chat", s.chatCompletions)},
		{"POST", "/v1/embeddings", s.endpoint("embeddings", s.embeddings)},
		{"GET", "/v1/models", s.endpoint("models", s.models)},
		{"GET", "/health", s.endpoint("health", s.health)},
		{"GET", "/metrics", s.serveMetrics},
		{"POST", "/tokenize", s.endpoint("tokenize", s.tokenize)},
		{"POST", "/detokenize", s.endpoint("detokenize", s.detokenize)},
	}
	methods := map[string]string{}
	for _, r := range routes {
		s.mux.HandleFunc(r.method+" "+r.path, r.h)
		methods[r.path] = r.method
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		e := &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("unknown route %s %s", r.Method, r.URL.Path)}
		if m, ok := methods[r.URL.Path]; ok {
			w.Header().Set("Allow", m)
			e.Status, e.Message = http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s, not %s", r.URL.Path, m, r.Method)
		}
		s.metrics.request("unknown", e.Status)
		writeError(w, e)
	})
}

// statusWriter remembers the status a handler answered with, for the
// request counters.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets streaming handlers flush through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// endpoint wraps a handler that returns an error: errors are answered in
// OpenAI's shape, and every request is counted by endpoint and status.
func (s *Server) endpoint(name string, h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		if err := h(sw, r); err != nil {
			if sw.status == 0 {
				writeError(sw, err)
			}
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		s.metrics.request(name, sw.status)
	}
}

// Shutdown stops taking requests and lets the running and queued ones
// finish; when ctx ends first, they are failed with 503 and Shutdown
// returns ctx's error. It does not stop the HTTP listener (see
// http.Server.Shutdown, to be called beside it).
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.stopOnce.Do(func() { close(s.stopping) })
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
	}
	s.abortOnce.Do(func() { close(s.abort) })
	<-s.done
	return ctx.Err()
}

// Close stops the scheduler at once (failing what runs) and frees the
// slots' memory. The model stays open.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		s.stopOnce.Do(func() { close(s.stopping) })
		s.abortOnce.Do(func() { close(s.abort) })
		s.cancelRun()
		<-s.done
		err = s.batcher.Close()
		if s.embedder != nil {
			err = errors.Join(err, s.embedder.sess.Close())
		}
	})
	return err
}

// ChatTemplate names the template /v1/chat/completions renders with, or
// says why there is none.
func (s *Server) ChatTemplate() string {
	if s.opts.Template == nil {
		return fmt.Sprintf("none (%v)", s.chatErr)
	}
	return s.opts.Template.Name()
}
