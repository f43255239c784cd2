package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/serve"
)

// serveConfig is what `graphrun serve` is told.
type serveConfig struct {
	host, apiKey, kvType, pooling       string
	flashAcc                            string
	port, parallel, ctx, threads        int
	queue, maxTokens, chunk, keep       int
	maxBody                             int64
	embeddings, flashAttn, contextShift bool
	grace                               time.Duration
}

func serveFlags(fs *flag.FlagSet) *serveConfig {
	c := &serveConfig{}
	fs.StringVar(&c.host, "host", "127.0.0.1", "address to listen on (0.0.0.0: every interface)")
	fs.IntVar(&c.port, "port", 8080, "port (0: any free one; the address is printed)")
	fs.IntVar(&c.parallel, "parallel", 4, "slots: requests generating at once")
	fs.IntVar(&c.ctx, "ctx", 0, "KV cache positions of each slot (default: the plan's context)")
	fs.IntVar(&c.threads, "threads", 0, "threads (default: all cores)")
	fs.StringVar(&c.kvType, "kv-type", "", "KV cache type f16|f32|q8_0|q4_0 (default: the plan's; q8_0 and q4_0 need --flash-attn)")
	fs.BoolVar(&c.flashAttn, "flash-attn", false, "flash attention, as llama.cpp's -fa (default: the plan's, off)")
	fs.StringVar(&c.flashAcc, "flash-acc", "", runtime.FlashAccUsage+" (default: the plan's)")
	fs.StringVar(&c.apiKey, "api-key", "", "require the header Authorization: Bearer KEY")
	fs.IntVar(&c.queue, "queue", 0, "requests that may wait for a slot before 503 (default: 4 × --parallel)")
	fs.IntVar(&c.maxTokens, "max-tokens", 0, "the largest max_tokens a request may ask (default: the slot context; larger only with --context-shift)")
	fs.IntVar(&c.chunk, "prefill-chunk", 128, "prompt tokens a step takes while other requests decode")
	fs.Int64Var(&c.maxBody, "max-body", 8<<20, "request body limit in bytes")
	fs.BoolVar(&c.embeddings, "embeddings", false, "serve /v1/embeddings (taps the final norm; see docs/decisions.md)")
	fs.StringVar(&c.pooling, "pooling", "mean", "embeddings pooling: mean or last")
	fs.BoolVar(&c.contextShift, "context-shift", false, "when a slot fills, discard half of its tokens after --keep and go on (llama-server's context shift)")
	fs.IntVar(&c.keep, "keep", 0, "with a context shift: prompt tokens kept besides BOS (-1: the whole prompt; a request's n_keep overrides it); giving it turns on --context-shift")
	fs.DurationVar(&c.grace, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long running requests may take to finish")
	return c
}

// runServe runs `graphrun serve` until ctx is cancelled (the first
// SIGINT or SIGTERM), then stops accepting connections and lets the
// requests in flight finish within --shutdown-timeout.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("graphrun serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := serveFlags(fs)
	where := addBackendFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return errUsage
	}
	fs.Visit(func(f *flag.Flag) { c.contextShift = c.contextShift || f.Name == "keep" })
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: graphrun serve MODEL.plan|MODEL.gguf [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N] [--api-key K] [--embeddings] [flags]")
		return errUsage
	}
	o := runtime.Options{Threads: c.threads, Compile: runtime.CompileOptions{Ctx: c.ctx, KVType: c.kvType, FlashAttn: c.flashAttn, FlashAcc: c.flashAcc}}
	if c.embeddings {
		o.Taps = serve.EmbeddingTaps
	}
	m, err := openModel(ctx, pos[0], where.options(o, stderr))
	if errors.Is(err, errLoadCancelled) {
		return nil
	}
	if err != nil {
		return err
	}
	defer m.Close()
	noteBackend(stderr, m)
	s, err := serve.New(m, serve.Options{Parallel: c.parallel, Ctx: c.ctx, KVType: c.kvType, QueueSize: c.queue, PrefillChunk: c.chunk,
		MaxTokens: c.maxTokens, MaxBodyBytes: c.maxBody, APIKey: c.apiKey, Embeddings: c.embeddings, Pooling: c.pooling,
		ContextShift: c.contextShift, Keep: c.keep})
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(c.host, strconv.Itoa(c.port)))
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "graphrun serve: %s on http://%s (%d slots, chat template %s)\n", m.Plan.Model.Path, ln.Addr(), c.parallel, s.ChatTemplate())
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	return shutdown(hs, s, c.grace, stderr)
}

// shutdown closes the listener and lets the server's requests finish
// within grace; those still running then are failed with 503.
func shutdown(hs *http.Server, s *serve.Server, grace time.Duration, stderr io.Writer) error {
	fmt.Fprintf(stderr, "graphrun serve: shutting down (requests in flight have %v)\n", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- s.Shutdown(sctx) }()
	herr := hs.Shutdown(sctx)
	if err := <-drained; err != nil {
		fmt.Fprintf(stderr, "graphrun serve: requests still running after %v were cancelled\n", grace)
	}
	if herr != nil && !errors.Is(herr, context.DeadlineExceeded) {
		return herr
	}
	hs.Close()
	return nil
}

// parseInterleaved parses flags that may come before or after the
// positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if args = fs.Args(); len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}
