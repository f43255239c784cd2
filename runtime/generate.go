package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weft-ml/weft/runtime/sample"
)

// GenerateOptions control one call of Generate.
type GenerateOptions struct {
	MaxTokens    int           // tokens to generate (≤ 0: until EOS or the context is full)
	Sampling     sample.Params // Temp 0 is greedy
	IgnoreEOS    bool          // keep going past end-of-generation tokens
	NoBOS        bool          // do not add BOS even where the model asks for it
	ParseSpecial bool          // turn special-token text in the prompt into control tokens
	// PromptLogits, when set, receives the logits of every prompt position
	// ([n_prompt][vocab], row-major) before generation starts.
	PromptLogits func(logits []float32) error
}

// Result summarises a generation.
type Result struct {
	PromptTokens []int32
	Tokens       []int32
	Text         string
	PrefillTime  time.Duration
	DecodeTime   time.Duration
	StopReason   string // "length", "eos", "context", "cancelled", "closed" (Model.Close)
	// ContextShifts counts the context shifts made during the call
	// (SessionOptions.ContextShift).
	ContextShifts int
	// PrefillCancelled: the prompt's evaluation was cancelled, so it was
	// taken out of the session again and nothing was generated.
	PrefillCancelled bool
}

// PrefillTokensPerSecond is the prompt evaluation speed (0 when it was
// cancelled).
func (r *Result) PrefillTokensPerSecond() float64 {
	if r.PrefillCancelled {
		return 0
	}
	return perSecond(len(r.PromptTokens), r.PrefillTime)
}

// DecodeTokensPerSecond is the generation speed (tokens after the first,
// which comes from the prefill's logits).
func (r *Result) DecodeTokensPerSecond() float64 {
	return perSecond(max(0, len(r.Tokens)-1), r.DecodeTime)
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate tokenizes prompt, appends it to the session, and samples up to
// o.MaxTokens tokens, calling onToken with each token id and the text it
// completes (UTF-8 safe: a character split across tokens arrives whole).
// Text still held back at the end (an incomplete character) arrives in a
// last call with id -1.
//
// Cancelling ctx stops generation cleanly, between two batches of the
// prompt (see EvalContext) or two generated tokens, and returns what was
// made with StopReason "cancelled" and a nil error; a prompt whose
// evaluation was cancelled is taken out of the session again. If the
// model is closed meanwhile, Generate returns what it made with an error
// wrapping ErrClosed. onToken and o.PromptLogits run while Generate holds
// the session: calling the session from them returns ErrSessionBusy.
func (s *Session) Generate(ctx context.Context, prompt string, o GenerateOptions, onToken func(id int32, text string) error) (*Result, error) {
	ids, err := s.m.Tokenizer.Encode(prompt, !o.NoBOS, o.ParseSpecial)
	if err != nil {
		return nil, fmt.Errorf("tokenizing the prompt: %w", err)
	}
	if len(ids) == 0 {
		return nil, errors.New("empty prompt: nothing to evaluate (give a prompt, or let the model add its BOS token)")
	}
	return s.GenerateTokens(ctx, ids, o, onToken)
}

// GenerateTokens is Generate for a prompt already tokenized (o.NoBOS and
// o.ParseSpecial do not apply): it appends ids to the session and samples
// the reply. With Truncate, it lets a chat keep the KV cache of the prefix
// a re-rendered conversation shares with History and evaluate only the
// rest.
func (s *Session) GenerateTokens(ctx context.Context, ids []int32, o GenerateOptions, onToken func(id int32, text string) error) (*Result, error) {
	if err := s.claim(); err != nil {
		return nil, err
	}
	defer s.unclaim()
	if s.m.isClosed() {
		return nil, ErrClosed
	}
	if len(ids) == 0 {
		return nil, errors.New("no prompt tokens: nothing to evaluate")
	}
	if !s.shift && s.Pos()+len(ids) >= s.Context() {
		return nil, fmt.Errorf("%w: the prompt has %d tokens, the context %d (with %d already used)", ErrContextFull, len(ids), s.Context(), s.Pos())
	}
	smp, err := sample.New(o.Sampling, s.m.VocabSize())
	if err != nil {
		return nil, err
	}
	for _, id := range s.history {
		smp.Accept(id)
	}
	for _, id := range ids {
		smp.Accept(id)
	}
	res := &Result{PromptTokens: ids}
	shifts0 := s.shifts
	defer func() { res.ContextShifts = s.shifts - shifts0 }()
	start := time.Now()
	logits, err := s.prefill(ctx, ids, o)
	res.PrefillTime = time.Since(start)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			res.StopReason, res.PrefillCancelled = "cancelled", true
			return res, nil
		}
		return nil, err
	}
	err = s.decode(ctx, logits, smp, o, res, onToken)
	return res, err
}

func (s *Session) prefill(ctx context.Context, ids []int32, o GenerateOptions) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("prompt not evaluated: %w", err)
	}
	if o.PromptLogits == nil {
		return s.eval(ctx, ids, false)
	}
	all, err := s.eval(ctx, ids, true)
	if err != nil {
		return nil, err
	}
	if err := o.PromptLogits(all); err != nil {
		return nil, err
	}
	vocab := s.m.VocabSize()
	return all[len(all)-vocab:], nil
}

func (s *Session) decode(ctx context.Context, logits []float32, smp *sample.Sampler, o GenerateOptions, res *Result, onToken func(int32, string) error) error {
	tok := s.m.Tokenizer
	dec := tok.NewStreamDecoder()
	start := time.Now()
	defer func() { res.DecodeTime = time.Since(start) }()
	var text []byte
	emit := func(id int32) error {
		piece := dec.Add(id)
		text = append(text, piece...)
		if onToken != nil {
			return onToken(id, piece)
		}
		return nil
	}
	defer func() {
		rest := dec.Flush()
		text = append(text, rest...)
		res.Text = string(text)
		if onToken != nil && rest != "" {
			onToken(-1, rest)
		}
	}()
	for {
		if ctx.Err() != nil {
			res.StopReason = "cancelled"
			return nil
		}
		id := smp.Sample(logits)
		smp.Accept(id)
		if !o.IgnoreEOS && tok.IsEOG(id) {
			res.StopReason = "eos"
			return nil
		}
		res.Tokens = append(res.Tokens, id)
		if err := emit(id); err != nil {
			return err
		}
		if o.MaxTokens > 0 && len(res.Tokens) >= o.MaxTokens {
			res.StopReason = "length"
			return nil
		}
		if !s.shift && s.Pos() >= s.Context() {
			res.StopReason = "context"
			return fmt.Errorf("%w after %d generated tokens (context %d)", ErrContextFull, len(res.Tokens), s.Context())
		}
		var err error
		if logits, err = s.step(id); err != nil {
			if errors.Is(err, ErrClosed) {
				res.StopReason = "closed"
				return fmt.Errorf("after %d generated tokens: %w", len(res.Tokens), err)
			}
			if errors.Is(err, ErrContextFull) {
				res.StopReason = "context"
			}
			return err
		}
	}
}
