package runtime

import (
	"fmt"

	"github.com/weft-ml/weft/backends"
)

// Shift makes room in the context as llama.cpp does when it fills
// (examples/main and the server at c392e5094): the first keep tokens
// stay, the next (Pos()−keep)/2 are discarded, and the others move down
// in the KV cache, their keys rotated by RoPE to their new positions
// (backends.KVShifter, ref.ShiftKV). History shrinks to match. It returns
// the number of tokens discarded, or an error when there is nothing to
// discard (keep leaves fewer than two tokens) or the backend cannot shift
// (no RoPE on the keys, a KV cache type without a shift); the session is
// then unchanged.
//
// SessionOptions.ContextShift calls it from Eval, Step and Generate with
// SessionOptions.Keep; call it directly to shift on your own schedule.
// It fails with ErrSessionBusy while another call runs, and with
// ErrClosed once the model is closed.
func (s *Session) Shift(keep int) (int, error) {
	if err := s.claim(); err != nil {
		return 0, err
	}
	defer s.unclaim()
	return s.shiftCtx(keep)
}

// Shifts is the number of context shifts the session has made.
func (s *Session) Shifts() int { return s.shifts }

// makeRoom shifts the context, when the session shifts (ContextShift),
// before n new tokens would reach its last position.
func (s *Session) makeRoom(n int) error {
	if !s.shift || s.Pos()+n < s.Context() {
		return nil
	}
	keep := min(s.keep, s.Pos())
	discard, err := shiftPlan(keep, s.Pos())
	if err == nil && s.Pos()-discard+n > s.Context() {
		err = fmt.Errorf("after discarding %d of them, %d new tokens still do not fit", discard, n)
	}
	if err == nil {
		_, err = s.shiftCtx(keep)
	}
	if err != nil {
		return fmt.Errorf("%w: %d tokens in the cache + %d new reach the context of %d, and the context shift failed: %w", ErrContextFull, s.Pos(), n, s.Context(), err)
	}
	return nil
}

// shiftCtx is Shift for a caller that holds the session.
func (s *Session) shiftCtx(keep int) (int, error) {
	m := s.m
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	n := s.Pos()
	discard, err := shiftPlan(keep, n)
	if err != nil {
		return 0, err
	}
	sh, ok := s.st.(backends.KVShifter)
	if !ok {
		return 0, fmt.Errorf("the %s backend cannot shift the context", m.Backend)
	}
	if err := sh.ShiftSeq(0, keep, discard, n); err != nil {
		return 0, fmt.Errorf("context shift: %w", err)
	}
	s.history = append(s.history[:keep], s.history[keep+discard:]...)
	s.pos.Store(int64(len(s.history)))
	s.shifts++
	return discard, nil
}

// shiftPlan is llama.cpp's rule: of n tokens, keep the first keep and
// discard half of the rest.
func shiftPlan(keep, n int) (int, error) {
	if keep < 0 || keep > n {
		return 0, fmt.Errorf("context shift keeping %d of %d tokens", keep, n)
	}
	discard := (n - keep) / 2
	if discard == 0 {
		return 0, fmt.Errorf("context shift keeping %d of %d tokens leaves nothing to discard (keep fewer tokens)", keep, n)
	}
	return discard, nil
}

// Shift is Session.Shift for one slot: it keeps slot's first keep tokens,
// discards the next (len−keep)/2 and moves the rest down, keys rotated to
// their new positions, and returns the number discarded. On error the
// slot is unchanged.
func (b *Batcher) Shift(slot, keep int) (int, error) {
	if err := b.claim(); err != nil {
		return 0, err
	}
	defer b.s.unclaim()
	if err := b.checkSlot(slot); err != nil {
		return 0, err
	}
	m := b.m
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	h := b.hist[slot]
	discard, err := shiftPlan(keep, len(h))
	if err != nil {
		return 0, fmt.Errorf("batcher: slot %d: %w", slot, err)
	}
	sh, ok := b.s.st.(backends.KVShifter)
	if !ok {
		return 0, fmt.Errorf("batcher: the %s backend cannot shift the context", m.Backend)
	}
	if err := sh.ShiftSeq(slot, keep, discard, len(h)); err != nil {
		return 0, fmt.Errorf("batcher: slot %d: context shift: %w", slot, err)
	}
	b.hist[slot] = append(h[:keep], h[keep+discard:]...)
	return discard, nil
}

// KeepTokens is llama.cpp's n_keep for a prompt of prompt tokens
// (examples/main): keep tokens of the prompt are kept besides its BOS
// token, when one was added (bos); a negative keep, or more than the
// prompt has, keeps the whole prompt. Like llama-server it is capped at
// ctx−4, so that a shift always has tokens to discard. The result is
// what SessionOptions.Keep and Batcher.Shift take.
func KeepTokens(keep, prompt int, bos bool, ctx int) int {
	switch {
	case keep < 0 || keep > prompt:
		keep = prompt
	case bos:
		keep++
	}
	return max(0, min(keep, ctx-4))
}
