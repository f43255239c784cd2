package runtime

import (
	"context"
	"fmt"
)

// BatcherOptions configure Model.NewBatcher. Zero values take the plan's
// settings.
type BatcherOptions struct {
	Slots   int    // sequences held at once (graphrun serve --parallel); 0: 1
	SlotCtx int    // KV cache positions of each sequence; 0: the plan's context
	KVType  string // "f16" or "f32"
}

// SeqInput is one sequence's share of a Batcher step: Tokens are
// appended to slot Slot's sequence; with Logits set the step returns the
// logits of the last of them.
type SeqInput struct {
	Slot   int
	Tokens []int32
	Logits bool
}

// Batcher holds the KV caches of several independent sequences (slots)
// and evaluates the new tokens of many of them together, so that a server
// reads the weights once per step for all its users (continuous
// batching). It serves one call at a time.
//
// The present implementation runs each slot as its own Session, one after
// another; the step's contract (what each sequence sees) does not depend
// on how the tokens are grouped into graph evaluations.
type Batcher struct {
	m     *Model
	slots []*Session
}

// NewBatcher allocates the KV caches of o.Slots sequences.
func (m *Model) NewBatcher(o BatcherOptions) (*Batcher, error) {
	if o.Slots == 0 {
		o.Slots = 1
	}
	if o.Slots < 0 || o.SlotCtx < 0 {
		return nil, fmt.Errorf("batcher: %d slots of %d positions: want positive numbers", o.Slots, o.SlotCtx)
	}
	b := &Batcher{m: m}
	for range o.Slots {
		s, err := m.NewSession(SessionOptions{Ctx: o.SlotCtx, KVType: o.KVType})
		if err != nil {
			b.Close()
			return nil, err
		}
		b.slots = append(b.slots, s)
	}
	return b, nil
}

// Slots is the number of sequences.
func (b *Batcher) Slots() int { return len(b.slots) }

// SlotContext is each sequence's KV cache size in positions.
func (b *Batcher) SlotContext() int { return b.slots[0].Context() }

// MaxTokens is the most tokens one graph evaluation takes; a Step with
// more runs several.
func (b *Batcher) MaxTokens() int { return b.m.prog.MaxTokens() }

// History returns the tokens in slot's KV cache (the Batcher's slice: do
// not modify it, and do not call History during a Step).
func (b *Batcher) History(slot int) []int32 { return b.slots[slot].History() }

// Truncate keeps the first n tokens of slot's sequence, so that a new
// request sharing them (a prefix) continues from there without
// recomputing them; Truncate(slot, 0) empties it.
func (b *Batcher) Truncate(slot, n int) error {
	if slot < 0 || slot >= len(b.slots) {
		return fmt.Errorf("batcher: slot %d of %d", slot, len(b.slots))
	}
	s := b.slots[slot]
	if n < 0 || n > s.Pos() {
		return fmt.Errorf("batcher: truncate slot %d to %d tokens: it holds %d", slot, n, s.Pos())
	}
	s.truncate(n)
	return nil
}

// Step appends each input's tokens to its slot and returns, for each
// input with Logits set, the logits of its last token ([vocab]; nil for
// the others). A slot may appear once per step. On error no slot has
// changed.
func (b *Batcher) Step(ctx context.Context, in []SeqInput) ([][]float32, error) {
	if err := b.check(in); err != nil {
		return nil, err
	}
	out := make([][]float32, len(in))
	pos0 := make([]int, len(in))
	for i, x := range in {
		s := b.slots[x.Slot]
		pos0[i] = s.Pos()
		logits, err := s.eval(ctx, x.Tokens, false)
		if err != nil {
			for j := range i {
				b.slots[in[j].Slot].truncate(pos0[j])
			}
			return nil, err
		}
		if x.Logits {
			out[i] = logits
		}
	}
	return out, nil
}

// check validates a step's inputs before anything runs.
func (b *Batcher) check(in []SeqInput) error {
	seen := make(map[int]bool, len(in))
	for _, x := range in {
		if x.Slot < 0 || x.Slot >= len(b.slots) {
			return fmt.Errorf("batcher: slot %d of %d", x.Slot, len(b.slots))
		}
		if seen[x.Slot] {
			return fmt.Errorf("batcher: slot %d appears twice in one step", x.Slot)
		}
		seen[x.Slot] = true
		if len(x.Tokens) == 0 {
			return fmt.Errorf("batcher: slot %d has no tokens in this step", x.Slot)
		}
		s := b.slots[x.Slot]
		if s.Pos()+len(x.Tokens) > s.Context() {
			return fmt.Errorf("%w: slot %d holds %d tokens + %d new, its context is %d", ErrContextFull, x.Slot, s.Pos(), len(x.Tokens), s.Context())
		}
	}
	return nil
}

// Close releases every slot's memory.
func (b *Batcher) Close() error {
	var first error
	for _, s := range b.slots {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	b.slots = nil
	return first
}
