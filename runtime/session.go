package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// ErrContextFull is returned when the KV cache has no room for more tokens.
var ErrContextFull = errors.New("context full")

// ErrClosed is returned by NewSession and by every Session method that
// evaluates once the Model has been closed.
var ErrClosed = errors.New("model is closed")

// ErrSessionBusy is returned when a Session is called while another
// goroutine's call on it is still running. The running call is not
// disturbed.
var ErrSessionBusy = errors.New("session is in use by another goroutine: make one Session per goroutine")

// SessionOptions configure a session. Zero values take the plan's settings.
type SessionOptions struct {
	Ctx    int    // KV cache positions
	KVType string // "f16", "f32", "q8_0" or "q4_0" (the last two need FlashAttn)
	// FlashAttn computes attention as llama.cpp's -fa does (see
	// backends.StateOptions.FlashAttn); the session uses it when either
	// this or the plan's run.flash_attn is set.
	FlashAttn bool
	// FlashAcc is flash attention's accumulator ("": the plan's; "f16",
	// llama.cpp's; "f32", backends.StateOptions.FlashF32Acc).
	FlashAcc string
	// Tap, when set, sees the value of every node the model was opened to
	// tap (Options.Taps) in each batch. A tapped session evaluates long
	// inputs in whole batches even with a cancellable context, so that
	// the values of two runs line up batch for batch.
	Tap TapFunc
	// ContextShift makes Eval, Step and Generate shift the context when
	// new tokens would fill it, as llama.cpp does (its default; weft's is
	// an ErrContextFull error): the first Keep tokens stay, half of the
	// others are discarded and the rest move down (see Session.Shift).
	// Like llama.cpp, it shifts once the tokens would reach the last
	// position (Pos()+n >= Context()), so that position stays unused.
	ContextShift bool
	// Keep is how many tokens at the start of the history a context
	// shift never discards (llama.cpp's n_keep, with the BOS token
	// counted: graphrun --keep N keeps the BOS plus N prompt tokens).
	Keep int
}

// Session is one conversation: a KV cache and the tokens in it.
//
// A Session serves one call at a time: a call made while another
// goroutine's call is running returns ErrSessionBusy (make one Session per
// goroutine; sessions of one Model run concurrently). Pos, Context and
// Model may be called from any goroutine at any time; History must not be
// called while the session is evaluating.
type Session struct {
	m       *Model
	st      backends.State // replaced by a releasedState on Close (release.go)
	ctx     int            // KV cache positions
	cost    tokenCost      // sizes cancellable chunks
	busy    atomic.Bool    // held by the running call (see claim)
	pos     atomic.Int64   // len(history), readable from any goroutine
	history []int32
	rowIdx  []int32 // scratch for output-row indices
	posBuf  []int32 // scratch for positions
	one     [1]int32
	tapped  bool // SessionOptions.Tap is set
	shift   bool // SessionOptions.ContextShift
	keep    int  // SessionOptions.Keep
	shifts  int  // context shifts so far
	batches int  // batches run so far (TapInfo.Step)
	tapPos  int  // first position of the running batch (TapInfo.Pos)
	kvType  backends.KVType
	prof    *sessionProfile // StartProfile (profile.go)
}

// NewSession allocates a KV cache and activation buffers.
func (m *Model) NewSession(o SessionOptions) (*Session, error) {
	return m.newSession(o, 1)
}

// newSession is NewSession with a State of seqs sequences (the Batcher's;
// a Session itself runs sequence 0).
func (m *Model) newSession(o SessionOptions, seqs int) (*Session, error) {
	if o.Ctx == 0 {
		o.Ctx = m.Plan.Run.Ctx
	}
	if o.KVType == "" {
		o.KVType = m.Plan.Run.KVType
	}
	kt, err := backends.ParseKVType(o.KVType)
	if err != nil {
		return nil, err
	}
	o.FlashAttn = o.FlashAttn || m.Plan.Run.FlashAttn
	if err := backends.CheckKV(kt, o.FlashAttn); err != nil {
		return nil, err
	}
	if o.FlashAcc == "" {
		o.FlashAcc = m.Plan.Run.FlashAcc
	}
	f32Acc, err := backends.ParseFlashAcc(o.FlashAcc)
	if err != nil {
		return nil, err
	}
	if err := checkCtx(m.Plan.Params, o.Ctx); err != nil {
		return nil, err
	}
	if o.Ctx > 0 && (o.Keep < 0 || o.Keep >= o.Ctx) { // a bad context is NewState's to refuse
		return nil, fmt.Errorf("keep %d tokens in a context shift: want 0 to %d (the context less one)", o.Keep, o.Ctx-1)
	}
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	st, err := m.prog.NewState(backends.StateOptions{Ctx: o.Ctx, KVType: kt, Seqs: seqs, FlashAttn: o.FlashAttn, FlashF32Acc: f32Acc})
	if err != nil {
		return nil, err
	}
	s := &Session{m: m, st: st, ctx: st.Context(), cost: costOf(m.Plan.Graph), history: make([]int32, 0, o.Ctx), shift: o.ContextShift, keep: o.Keep, kvType: kt}
	if o.Tap != nil {
		if err := s.setTap(o.Tap); err != nil {
			closeIfCloser(st)
			return nil, err
		}
		s.tapped = true
	}
	m.track(s)
	return s, nil
}

// claim marks the session in use by the calling goroutine, or returns
// ErrSessionBusy; a nil return must be paired with unclaim. (Releasing
// the session's memory is Close, in release.go.)
func (s *Session) claim() error {
	if !s.busy.CompareAndSwap(false, true) {
		return ErrSessionBusy
	}
	return nil
}

func (s *Session) unclaim() { s.busy.Store(false) }

// Model returns the session's model.
func (s *Session) Model() *Model { return s.m }

// Pos is the number of tokens in the KV cache. It may be read from any
// goroutine, for example to show the progress of a long Eval.
func (s *Session) Pos() int { return int(s.pos.Load()) }

// Context is the KV cache size in tokens.
func (s *Session) Context() int { return s.ctx }

// History returns the tokens in the KV cache. The slice is the session's:
// do not modify it, and do not call History while another goroutine
// evaluates on the session.
func (s *Session) History() []int32 { return s.history[:len(s.history):len(s.history)] }

// Reset empties the KV cache so the session can start a new sequence.
// It fails with ErrSessionBusy while another call runs, and with
// ErrClosed once the model is closed.
func (s *Session) Reset() error {
	if err := s.claim(); err != nil {
		return err
	}
	defer s.unclaim()
	if s.m.isClosed() {
		return ErrClosed
	}
	s.truncate(0)
	return nil
}

// Truncate drops the tokens from position n on, keeping the KV cache of
// the first n: a caller that re-sends a conversation evaluates only what
// follows the prefix it shares with History. n must be within 0..Pos().
// It fails with ErrSessionBusy while another call runs, and with
// ErrClosed once the model is closed.
func (s *Session) Truncate(n int) error {
	if err := s.claim(); err != nil {
		return err
	}
	defer s.unclaim()
	if s.m.isClosed() {
		return ErrClosed
	}
	if n < 0 || n > s.Pos() {
		return fmt.Errorf("truncate to %d tokens: the session holds %d", n, s.Pos())
	}
	s.truncate(n)
	return nil
}

// truncate drops the tokens from position n on. The KV cache entries
// beyond the history are never read before they are written again.
func (s *Session) truncate(n int) {
	s.history = s.history[:n]
	s.pos.Store(int64(n))
}

// Eval appends tokens to the sequence, running them in batches of the
// plan's batch size, and returns logits: for every token as
// [len(tokens)][vocab] when all is set, else for the last token only.
// The returned slice belongs to the caller. On error the session is left
// as it was before the call, except for a context shift made first
// (SessionOptions.ContextShift), which stays.
func (s *Session) Eval(tokens []int32, all bool) ([]float32, error) {
	return s.EvalContext(context.Background(), tokens, all)
}

// EvalContext is Eval that stops between batches once ctx is done,
// returning an error that wraps ctx.Err() and leaving the session as it
// was before the call. When ctx can be cancelled, long inputs are run in
// chunks sized to take about evalChunkTarget each (see chunkFloor), so
// that cancellation takes effect quickly; the logits do not depend on how
// the tokens are split.
func (s *Session) EvalContext(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	if err := s.claim(); err != nil {
		return nil, err
	}
	defer s.unclaim()
	return s.eval(ctx, tokens, all)
}

// Cancellable evaluation splits a long input into chunks of about
// evalChunkTarget, so that a cancelled prefill returns within about one
// chunk rather than one full batch (seconds on a 7B model).
//
// Each chunk costs about one extra pass over the weights, so while the
// weights dominate a token's cost chunks keep at least minEvalChunk
// tokens. Measured on 16 cores, 512 prompt tokens took as long in
// 128-token chunks as in one batch (within the 2-3% noise) on a 7B Q4_0
// model and about 3% longer on a 1.1B one; 64-token chunks lost 12% and
// 25%, 32-token ones 25% and 40%. Deep in a long context attention
// dominates instead, which chunks do not slow, and the floor falls with
// the weights' share (chunkFloor) down to minAttnChunk. Eval without a
// cancellable context (and so Bench) runs whole batches.
const (
	evalChunkTarget = 250 * time.Millisecond
	minEvalChunk    = 128
	minAttnChunk    = 8
)

// tokenCost is what one token of prefill costs in multiply-adds: against
// the weights, and in attention per position already in the cache.
type tokenCost struct{ weights, attnPerPos float64 }

// costOf estimates a token's cost from the graph: the matrix weights every
// node reads (embedding lookups excepted) and each attention's heads.
func costOf(g *graph.Graph) tokenCost {
	var c tokenCost
	for _, n := range g.Nodes {
		switch {
		case n.Op == ops.Attention:
			c.attnPerPos += 2 * float64(n.Attrs.Int("heads")*n.Attrs.Int("head_dim"))
		case n.Op != ops.GetRows:
			for _, id := range n.Inputs {
				w := g.Nodes[id]
				if sh := w.Type.Shape; w.Tensor != "" && len(sh) == 2 && !sh[0].IsSym() && !sh[1].IsSym() {
					c.weights += float64(sh[0].N) * float64(sh[1].N)
				}
			}
		}
	}
	return c
}

// chunkFloor is the smallest chunk worth running at position pos:
// minEvalChunk scaled by the weights' share of a token's cost.
func (c tokenCost) chunkFloor(pos int) int {
	share := 1.0
	if total := c.weights + c.attnPerPos*float64(pos); total > 0 {
		share = c.weights / total
	}
	return max(minAttnChunk, int(math.Ceil(minEvalChunk*share)))
}

// eval is EvalContext for a caller that holds the session.
func (s *Session) eval(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("no tokens to evaluate")
	}
	if err := s.makeRoom(len(tokens)); err != nil {
		return nil, err
	}
	pos0 := s.Pos()
	if pos0+len(tokens) > s.Context() {
		return nil, fmt.Errorf("%w: %d tokens in the cache + %d new exceed the context of %d", ErrContextFull, pos0, len(tokens), s.Context())
	}
	vocab := s.m.VocabSize()
	var out []float32
	if all {
		out = make([]float32, 0, len(tokens)*vocab)
	}
	batch := s.m.prog.MaxTokens()
	size, adapt := batch, ctx.Done() != nil && !s.tapped
	if adapt {
		size = min(batch, s.cost.chunkFloor(pos0))
	}
	for lo := 0; lo < len(tokens); {
		if err := ctx.Err(); err != nil {
			s.truncate(pos0)
			return nil, fmt.Errorf("evaluation stopped after %d of %d tokens: %w", lo, len(tokens), err)
		}
		n := chunkLen(len(tokens)-lo, size, batch)
		start := time.Now()
		logits, err := s.evalBatch(tokens[lo:lo+n], all)
		if err != nil {
			s.truncate(pos0)
			return nil, err
		}
		if adapt {
			size = nextChunk(time.Since(start), n, batch, s.cost.chunkFloor(s.Pos()))
		}
		lo += n
		if all {
			out = append(out, logits...)
		} else if lo == len(tokens) {
			out = append([]float32(nil), logits...)
		}
	}
	return out, nil
}

// chunkLen is the size of the next batch for rest remaining tokens, at
// most size (itself at most batch). It avoids leaving a lone last token:
// the backend computes a single token with its one-row kernels, which may
// round differently from the batched ones, and the logits of a sequence
// must not depend on how it was split.
func chunkLen(rest, size, batch int) int {
	n := min(rest, size)
	if rest-n == 1 && batch > 2 {
		if n < batch {
			n++
		} else {
			n--
		}
	}
	return n
}

// nextChunk sizes the next chunk so that it takes about evalChunkTarget,
// given that the last one of n tokens took d, and at least floor tokens.
func nextChunk(d time.Duration, n, batch, floor int) int {
	size := batch
	if d > 0 {
		size = int(min(int64(batch), int64(evalChunkTarget)*int64(n)/int64(d)))
	}
	return min(batch, max(size, floor))
}

// Step appends one token and returns the logits that follow it. The slice
// belongs to the session and is overwritten by the next call; Step
// allocates nothing, so a decode loop of Step and a sample.Sampler runs
// without garbage.
func (s *Session) Step(id int32) ([]float32, error) {
	if err := s.claim(); err != nil {
		return nil, err
	}
	defer s.unclaim()
	return s.step(id)
}

// step is Step for a caller that holds the session.
func (s *Session) step(id int32) ([]float32, error) {
	if err := s.makeRoom(1); err != nil {
		return nil, err
	}
	if s.Pos() >= s.Context() {
		return nil, fmt.Errorf("%w: all %d positions are used", ErrContextFull, s.Context())
	}
	s.one[0] = id
	return s.evalBatch(s.one[:], false)
}

// evalBatch runs one batch of at most the plan's batch size. It holds the
// model's read lock while the kernels run, so Close waits for it.
func (s *Session) evalBatch(tokens []int32, all bool) ([]float32, error) {
	m := s.m
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	n := len(tokens)
	pos := s.Pos()
	s.posBuf = s.posBuf[:0]
	for i := 0; i < n; i++ {
		s.posBuf = append(s.posBuf, int32(pos+i))
	}
	s.rowIdx = s.rowIdx[:0]
	if all {
		for i := 0; i < n; i++ {
			s.rowIdx = append(s.rowIdx, int32(i))
		}
	} else {
		s.rowIdx = append(s.rowIdx, int32(n-1))
	}
	s.tapPos = pos
	logits, err := s.st.Run(backends.Batch{Tokens: tokens, Positions: s.posBuf, Rows: s.rowIdx})
	s.batches++
	if err != nil {
		return nil, err
	}
	if s.prof != nil {
		s.prof.note(n, pos+n)
	}
	// No result leaves before the side file's full checksum has passed
	// (it runs in the background from load; see integrity.go).
	if err := m.Verify(); err != nil {
		return nil, err
	}
	s.history = append(s.history, tokens...)
	s.pos.Store(int64(len(s.history)))
	return logits, nil
}
