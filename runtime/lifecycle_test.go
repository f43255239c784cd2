package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/testenv"
)

// openOwn opens the test model for a test that closes it itself (the
// cleanup's second Close must be harmless).
func openOwn(t *testing.T, path string) *Model {
	t.Helper()
	m, err := Open(path, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Close(), "a second Close") })
	return m
}

// TestCloseWhileGenerating closes the model while a Generate is between
// two tokens: Close returns, and the generation stops with ErrClosed and
// what it made instead of running kernels on unmapped weights.
func TestCloseWhileGenerating(t *testing.T) {
	m := openOwn(t, stories(t))
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	started, closed := make(chan struct{}), make(chan struct{})
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		n := 0
		res, err := s.Generate(context.Background(), "Once upon a time", greedy(400), func(id int32, _ string) error {
			if n++; n == 3 {
				close(started)
				<-closed
			}
			return nil
		})
		done <- out{res, err}
	}()
	<-started
	require.NoError(t, m.Close())
	close(closed)
	o := <-done
	require.ErrorIs(t, o.err, ErrClosed)
	assert.Contains(t, o.err.Error(), "model is closed")
	require.NotNil(t, o.res, "Generate returns what it made")
	assert.Equal(t, "closed", o.res.StopReason)
	assert.Len(t, o.res.Tokens, 3)
	assert.NotEmpty(t, o.res.Text)
}

// TestCloseUnderRunningSessions closes the model while several sessions
// run kernels without pause. Each must end with ErrClosed (or finish),
// never crash; Close must wait for the batches in flight.
func TestCloseUnderRunningSessions(t *testing.T) {
	for round := 0; round < 3; round++ {
		m, err := Open(stories(t), Options{})
		require.NoError(t, err)
		var wg sync.WaitGroup
		var running atomic.Int32
		errs := make(chan error, 8)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := m.NewSession(SessionOptions{})
				if err != nil {
					errs <- err
					return
				}
				running.Add(1)
				for {
					if err := s.Reset(); err != nil {
						errs <- err
						return
					}
					if _, err := s.Generate(context.Background(), strings.Repeat("Once upon a time ", 20), greedy(64), nil); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for running.Load() < 4 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(round*7) * time.Millisecond)
		require.NoError(t, m.Close())
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.ErrorIs(t, err, ErrClosed)
		}
		require.NoError(t, m.Close(), "Close twice")
	}
}

// TestUseAfterClose: every call that would touch the weights returns
// ErrClosed, and Close is idempotent.
func TestUseAfterClose(t *testing.T) {
	m := openOwn(t, stories(t))
	s, err := m.NewSession(SessionOptions{Ctx: 64})
	require.NoError(t, err)
	_, err = s.Eval([]int32{1, 403}, false)
	require.NoError(t, err)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())

	calls := map[string]func() error{
		"NewSession": func() error { _, err := m.NewSession(SessionOptions{}); return err },
		"Eval":       func() error { _, err := s.Eval([]int32{1}, false); return err },
		"EvalContext": func() error {
			_, err := s.EvalContext(context.Background(), []int32{1, 2, 3}, true)
			return err
		},
		"Step": func() error { _, err := s.Step(1); return err },
		"Generate": func() error {
			_, err := s.Generate(context.Background(), "Once", greedy(4), nil)
			return err
		},
		"Reset": s.Reset,
		"Bench": func() error { _, err := m.Bench(BenchOptions{PromptTokens: 4, GenTokens: 4}); return err },
	}
	for name, call := range calls {
		err := call()
		require.ErrorIs(t, err, ErrClosed, name)
		assert.Equal(t, "model is closed", err.Error(), name)
	}
	// The accessors read the session's own memory and keep working.
	assert.Equal(t, 2, s.Pos())
	assert.Equal(t, []int32{1, 403}, s.History())
	assert.Equal(t, 64, s.Context())
	assert.Same(t, m, s.Model())
}

// TestSessionBusyIsReported: a call made while another goroutine's call
// runs gets ErrSessionBusy and leaves the running call undisturbed.
func TestSessionBusyIsReported(t *testing.T) {
	m := openStories(t)
	alone, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	want, err := alone.Generate(context.Background(), "Once upon a time", greedy(12), nil)
	require.NoError(t, err)

	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	var busyErrs []error
	res, err := s.Generate(context.Background(), "Once upon a time", greedy(12), func(id int32, _ string) error {
		if id < 0 || len(busyErrs) > 0 {
			return nil
		}
		ch := make(chan []error)
		go func() { // another goroutine
			var errs []error
			_, err := s.Step(1)
			errs = append(errs, err)
			_, err = s.Eval([]int32{1, 2}, true)
			errs = append(errs, err)
			_, err = s.EvalContext(context.Background(), []int32{1}, false)
			errs = append(errs, err)
			_, err = s.Generate(context.Background(), "x", greedy(1), nil)
			errs = append(errs, err)
			errs = append(errs, s.Reset())
			ch <- errs
		}()
		busyErrs = <-ch
		_, err := s.Step(1) // and the same goroutine, from the callback
		busyErrs = append(busyErrs, err)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, busyErrs, 6)
	for i, err := range busyErrs {
		require.ErrorIs(t, err, ErrSessionBusy, "call %d", i)
		assert.Equal(t, "session is in use by another goroutine: make one Session per goroutine", err.Error())
	}
	assert.Equal(t, want.Text, res.Text, "the running Generate was disturbed")
	assert.Equal(t, want.Tokens, res.Tokens)
}

// TestSessionHammeredFromGoroutines: goroutines call Step and Eval on one
// session at once, each until perG of its calls have run. A call either
// runs alone or gets ErrSessionBusy; the KV cache ends up exactly as a
// lone session fed the same tokens leaves it.
func TestSessionHammeredFromGoroutines(t *testing.T) {
	m := openStories(t)
	const goroutines, perG = 4, 40
	s, err := m.NewSession(SessionOptions{Ctx: goroutines*perG + 8})
	require.NoError(t, err)
	_, err = s.Eval([]int32{1, 403, 407}, false)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var busy [goroutines]int
	other := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ok := 0; ok < perG; {
				var err error
				if ok%3 == 2 {
					_, err = s.Eval([]int32{int32(10 + g)}, false)
				} else {
					_, err = s.Step(int32(10 + g))
				}
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrSessionBusy):
					busy[g]++
					goruntime.Gosched()
				default:
					other <- err
					return
				}
				_ = s.Pos() // safe from any goroutine
			}
		}()
	}
	wg.Wait()
	close(other)
	for err := range other {
		t.Errorf("unexpected error: %v", err)
	}
	counts := map[int32]int{}
	for _, id := range s.History()[3:] {
		counts[id]++
	}
	for g := 0; g < goroutines; g++ {
		assert.Equal(t, perG, counts[int32(10+g)], "goroutine %d: its tokens in the cache", g)
	}
	require.Equal(t, 3+goroutines*perG, s.Pos())
	t.Logf("%d calls ran, %v were refused as busy", goroutines*perG, busy)

	// The cache is intact: the next step's logits match a lone session's.
	got, err := s.Step(5)
	require.NoError(t, err)
	ref, err := m.NewSession(SessionOptions{Ctx: s.Context()})
	require.NoError(t, err)
	want, err := ref.Eval(s.History()[:3], false)
	require.NoError(t, err)
	for _, id := range append(append([]int32(nil), s.History()[3:s.Pos()-1]...), 5) {
		want, err = ref.Step(id)
		require.NoError(t, err)
	}
	require.Equal(t, want, got)
}

// TestCancelledPrefillStopsBetweenChunks: cancelling during a long prompt
// stops within about one chunk, reports "cancelled" and takes the prompt
// out of the session again.
func TestCancelledPrefillStopsBetweenChunks(t *testing.T) {
	m := openStories(t)
	s, err := m.NewSession(SessionOptions{Ctx: 8192})
	require.NoError(t, err)
	prompt := strings.Repeat("Once upon a time there was a little girl named Lily. ", 300)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A watcher cancels once the first chunk is in and then records how
	// far the prompt got: at most the chunk running at the cancel may end.
	var cancelledAt time.Time
	var atCancel, highest int
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for s.Pos() == 0 { // Pos may be read while the session runs
			time.Sleep(50 * time.Microsecond)
		}
		atCancel, cancelledAt = s.Pos(), time.Now()
		cancel()
		for {
			highest = max(highest, s.Pos())
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Microsecond):
			}
		}
	}()
	res, err := s.Generate(ctx, prompt, greedy(8), func(int32, string) error {
		t.Error("a token was generated after the prompt was cancelled")
		return nil
	})
	returned := time.Now()
	close(stop)
	<-watched
	require.NoError(t, err)
	assert.Equal(t, "cancelled", res.StopReason)
	assert.Greater(t, len(res.PromptTokens), 4*m.Plan.Run.Batch)
	assert.Empty(t, res.Tokens)
	assert.Equal(t, 0, s.Pos(), "the cancelled prompt stays out of the session")
	assert.LessOrEqual(t, highest-atCancel, m.Plan.Run.Batch, "tokens evaluated after the cancel")
	lag := returned.Sub(cancelledAt)
	t.Logf("prompt of %d tokens: cancelled at %d, returned %v later with %d evaluated (prefill ran %v)", len(res.PromptTokens), atCancel, lag, highest, res.PrefillTime)
	if !raceEnabled {
		assert.Less(t, lag, 10*time.Second, "a chunk is sized to take about %v", evalChunkTarget)
	}

	// The session works on afterwards, as if the prompt had never run.
	again, err := s.Generate(context.Background(), "Once upon a time", greedy(12), nil)
	require.NoError(t, err)
	fresh, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	want, err := fresh.Generate(context.Background(), "Once upon a time", greedy(12), nil)
	require.NoError(t, err)
	assert.Equal(t, want.Text, again.Text)
}

func TestEvalContextCancelled(t *testing.T) {
	m := openStories(t)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	_, err = s.Eval([]int32{1, 403}, false)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.EvalContext(ctx, []int32{407, 408, 409}, false)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, s.Pos(), "a cancelled Eval leaves the session as it was")

	res, err := s.Generate(ctx, "Once", greedy(4), nil)
	require.NoError(t, err)
	assert.Equal(t, "cancelled", res.StopReason)
	assert.Equal(t, 2, s.Pos())
}

// TestChunkedEvalMatchesOneBatch: a cancellable EvalContext splits long
// input into chunks; the logits must not change.
func TestChunkedEvalMatchesOneBatch(t *testing.T) {
	models := []string{stories(t)}
	// F16 weights: the one-token kernels round differently from the
	// batched ones, so a lone-token chunk would show here.
	f16 := filepath.Join(testenv.RepoRoot(t), "..", "shared", "models", "stories260K-F16.gguf")
	if _, err := os.Stat(f16); err == nil {
		models = append(models, f16)
	} else {
		t.Logf("%s not found: checking the F32 model only", f16)
	}
	for _, path := range models {
		m, err := Open(path, Options{})
		require.NoError(t, err)
		tokens := make([]int32, 2*m.Plan.Run.Batch+1) // chunks of 128 and a lone-token tail to avoid
		for i := range tokens {
			tokens[i] = int32(1 + (i*37)%(m.VocabSize()-1))
		}
		ctx, cancel := context.WithCancel(context.Background())
		a, _ := m.NewSession(SessionOptions{Ctx: len(tokens)})
		b, _ := m.NewSession(SessionOptions{Ctx: len(tokens)})
		whole, err := a.Eval(tokens, true)
		require.NoError(t, err)
		chunked, err := b.EvalContext(ctx, tokens, true)
		require.NoError(t, err)
		cancel()
		require.Len(t, chunked, len(whole))
		differ := 0
		for i := range whole {
			if whole[i] != chunked[i] {
				differ++
			}
		}
		require.Zero(t, differ, "%s: logits that differ between one batch and chunks", path)
		m.Close()
	}
}

func TestChunkLen(t *testing.T) {
	for _, batch := range []int{3, 4, 16, 512} {
		for _, size := range []int{1, 2, 3, batch / 2, batch - 1, batch, minEvalChunk} {
			if size < 1 || size > batch {
				continue
			}
			for total := 1; total <= 3*batch+2; total++ {
				var chunks []int
				for rest := total; rest > 0; {
					n := chunkLen(rest, size, batch)
					require.True(t, n >= 1 && n <= batch, "batch %d size %d total %d: chunk %d", batch, size, total, n)
					chunks = append(chunks, n)
					rest -= n
				}
				if total > 1 && size > 1 {
					for _, n := range chunks {
						require.NotEqual(t, 1, n, "batch %d size %d total %d: a lone token in %v", batch, size, total, chunks)
					}
				}
			}
		}
	}
	assert.Equal(t, 512, nextChunk(time.Millisecond, 128, 512, 128))
	assert.Equal(t, 128, nextChunk(10*time.Second, 128, 512, 128))
	assert.Equal(t, 8, nextChunk(10*time.Second, 128, 512, 8))
	assert.Equal(t, 256, nextChunk(evalChunkTarget/2, 128, 512, 128))
	assert.Equal(t, 2, nextChunk(time.Hour, 2, 2, 128))
}

// TestChunkFloor: chunks keep minEvalChunk tokens while the weights
// dominate and shrink deep in a long context, where attention does.
func TestChunkFloor(t *testing.T) {
	m := openStories(t)
	c := costOf(m.Plan.Graph)
	p := m.Plan.Params
	q, kv := p.Heads*p.HeadDim, p.KVHeads*p.HeadDim
	perLayer := 2*p.Embd*q + 2*p.Embd*kv + 3*p.Embd*p.FFN // q and o, k and v, gate, up and down
	assert.Equal(t, float64(p.Layers*perLayer+p.Embd*p.VocabSize), c.weights)
	assert.Equal(t, float64(p.Layers*2*q), c.attnPerPos)
	assert.Equal(t, minEvalChunk, c.chunkFloor(0))
	assert.Less(t, c.chunkFloor(512), minEvalChunk)
	assert.Equal(t, minAttnChunk, c.chunkFloor(1<<20))
}
