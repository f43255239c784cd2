package runtime

import (
	"errors"
	"fmt"

	"github.com/weft-ml/weft/backends/cpu"
)

// ErrContextFull is returned when the KV cache has no room for more tokens.
var ErrContextFull = errors.New("context full")

// SessionOptions configure a session. Zero values take the plan's settings.
type SessionOptions struct {
	Ctx    int    // KV cache positions
	KVType string // "f16" or "f32"
}

// Session is one conversation: a KV cache and the tokens in it. A Session
// is not safe for concurrent use; make one per goroutine.
type Session struct {
	m       *Model
	st      *cpu.State
	history []int32
	rowIdx  []int32 // scratch for output-row indices
	posBuf  []int32 // scratch for positions
	one     [1]int32
}

// NewSession allocates a KV cache and activation buffers.
func (m *Model) NewSession(o SessionOptions) (*Session, error) {
	if o.Ctx == 0 {
		o.Ctx = m.Plan.Run.Ctx
	}
	if o.KVType == "" {
		o.KVType = m.Plan.Run.KVType
	}
	var kt cpu.KVType
	switch o.KVType {
	case "f16":
		kt = cpu.KVF16
	case "f32":
		kt = cpu.KVF32
	default:
		return nil, fmt.Errorf("KV cache type %q: want f16 or f32", o.KVType)
	}
	st, err := m.prog.NewState(o.Ctx, kt)
	if err != nil {
		return nil, err
	}
	return &Session{m: m, st: st, history: make([]int32, 0, o.Ctx)}, nil
}

// Model returns the session's model.
func (s *Session) Model() *Model { return s.m }

// Pos is the number of tokens in the KV cache.
func (s *Session) Pos() int { return len(s.history) }

// Context is the KV cache size in tokens.
func (s *Session) Context() int { return s.st.Context() }

// History returns the tokens in the KV cache.
func (s *Session) History() []int32 { return s.history }

// Reset empties the KV cache so the session can start a new sequence.
func (s *Session) Reset() { s.history = s.history[:0] }

// Eval appends tokens to the sequence, running them in batches of the
// plan's batch size, and returns logits: for every token as
// [len(tokens)][vocab] when all is set, else for the last token only.
// The returned slice belongs to the caller.
func (s *Session) Eval(tokens []int32, all bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("no tokens to evaluate")
	}
	if s.Pos()+len(tokens) > s.Context() {
		return nil, fmt.Errorf("%w: %d tokens in the cache + %d new exceed the context of %d", ErrContextFull, s.Pos(), len(tokens), s.Context())
	}
	vocab := s.m.VocabSize()
	var out []float32
	if all {
		out = make([]float32, 0, len(tokens)*vocab)
	}
	batch := s.m.prog.MaxTokens()
	for lo := 0; lo < len(tokens); lo += batch {
		hi := min(len(tokens), lo+batch)
		logits, err := s.evalBatch(tokens[lo:hi], all)
		if err != nil {
			return nil, err
		}
		if all {
			out = append(out, logits...)
		} else if hi == len(tokens) {
			out = append([]float32(nil), logits...)
		}
	}
	return out, nil
}

// Step appends one token and returns the logits that follow it. The slice
// belongs to the session and is overwritten by the next call; Step
// allocates nothing, so a decode loop of Step and a sample.Sampler runs
// without garbage.
func (s *Session) Step(id int32) ([]float32, error) {
	if s.Pos() >= s.Context() {
		return nil, fmt.Errorf("%w: all %d positions are used", ErrContextFull, s.Context())
	}
	s.one[0] = id
	return s.evalBatch(s.one[:], false)
}

func (s *Session) evalBatch(tokens []int32, all bool) ([]float32, error) {
	n := len(tokens)
	s.posBuf = s.posBuf[:0]
	for i := 0; i < n; i++ {
		s.posBuf = append(s.posBuf, int32(s.Pos()+i))
	}
	s.rowIdx = s.rowIdx[:0]
	if all {
		for i := 0; i < n; i++ {
			s.rowIdx = append(s.rowIdx, int32(i))
		}
	} else {
		s.rowIdx = append(s.rowIdx, int32(n-1))
	}
	logits, err := s.st.Run(tokens, s.posBuf, s.rowIdx)
	if err != nil {
		return nil, err
	}
	s.history = append(s.history, tokens...)
	return logits, nil
}
