package runtime

import (
	"context"
	"fmt"

	"github.com/weft-ml/weft/backends"
)

// BatcherOptions configure Model.NewBatcher. Zero values take the plan's
// settings.
type BatcherOptions struct {
	Slots   int    // sequences held at once (graphrun serve --parallel); 0: 1
	SlotCtx int    // KV cache positions of each sequence; 0: the plan's context
	KVType  string // "f16", "f32", "q8_0" or "q4_0"
	// FlashAttn and FlashAcc: as SessionOptions's.
	FlashAttn bool
	FlashAcc  string
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
// batching). It serves one call at a time (a call made while another runs
// returns ErrSessionBusy).
//
// A step packs every input's tokens into one graph evaluation (several
// when they are more than MaxTokens): each token carries its slot as its
// sequence (backends.Batch.Seqs) and attends to its own slot's cells
// only, so what a sequence sees does not depend on the others. Its
// logits can still differ in the last bits with the batch's size, as
// prefill and decode differ, where a backend sums a lone token's products
// in another order than a batch's: on the CPU they are bit-identical for
// F32 and quantized weights but not for F16 ones (row kernel against
// GEMM); on Vulkan the matrix-vector and matmul shaders differ (about
// 1e-3 of the logits' spread on stories260K). Greedy tokens agree.
//
// CopyPrefix copies the KV cells of one slot's first tokens into
// another, so a request that shares a prefix with a slot's history (a
// system prompt, an earlier turn) starts from there without recomputing
// it.
type Batcher struct {
	m    *Model
	s    *Session  // holds the State of every slot; its own history is unused; nil once closed
	ctx  int       // positions per slot
	hist [][]int32 // per slot: the tokens in its KV cells
	// Scratch reused by every step.
	batch backends.Batch
	want  []int // per batch row asked for: the input it answers
}

// NewBatcher allocates the KV caches of o.Slots sequences, each of
// o.SlotCtx positions, in one backend State.
func (m *Model) NewBatcher(o BatcherOptions) (*Batcher, error) {
	if o.Slots == 0 {
		o.Slots = 1
	}
	if o.Slots < 0 || o.SlotCtx < 0 {
		return nil, fmt.Errorf("batcher: %d slots of %d positions: want positive numbers", o.Slots, o.SlotCtx)
	}
	s, err := m.newSession(SessionOptions{Ctx: o.SlotCtx, KVType: o.KVType, FlashAttn: o.FlashAttn, FlashAcc: o.FlashAcc}, o.Slots)
	if err != nil {
		return nil, err
	}
	b := &Batcher{m: m, s: s, ctx: s.Context(), hist: make([][]int32, o.Slots)}
	for i := range b.hist {
		b.hist[i] = make([]int32, 0, s.Context())
	}
	return b, nil
}

// Slots is the number of sequences.
func (b *Batcher) Slots() int { return len(b.hist) }

// SlotContext is each sequence's KV cache size in positions.
func (b *Batcher) SlotContext() int { return b.ctx }

// MaxTokens is the most tokens one graph evaluation takes; a Step with
// more runs several.
func (b *Batcher) MaxTokens() int { return b.m.prog.MaxTokens() }

// History returns the tokens in slot's KV cache (the Batcher's slice: do
// not modify it, and do not call History during a Step).
func (b *Batcher) History(slot int) []int32 {
	if slot < 0 || slot >= len(b.hist) {
		return nil
	}
	h := b.hist[slot]
	return h[:len(h):len(h)]
}

// Truncate keeps the first n tokens of slot's sequence, so that a new
// request sharing them (a prefix) continues from there without
// recomputing them; Truncate(slot, 0) empties it. The cells beyond are
// never read before a later step writes them again.
func (b *Batcher) Truncate(slot, n int) error {
	if err := b.claim(); err != nil {
		return err
	}
	defer b.s.unclaim()
	if err := b.checkSlot(slot); err != nil {
		return err
	}
	if n < 0 || n > len(b.hist[slot]) {
		return fmt.Errorf("batcher: truncate slot %d to %d tokens: it holds %d", slot, n, len(b.hist[slot]))
	}
	b.hist[slot] = b.hist[slot][:n]
	return nil
}

// CopyPrefix makes slot dst hold the first n tokens of slot src, copying
// their KV cells (what dst held is dropped; src is unchanged), so that a
// request whose prompt starts with src's first n tokens continues in dst
// from there. dst and src may be equal (then it is Truncate). It fails,
// changing nothing, when the backend cannot copy cells between sequences.
func (b *Batcher) CopyPrefix(dst, src, n int) error {
	if err := b.claim(); err != nil {
		return err
	}
	defer b.s.unclaim()
	if err := b.checkSlot(dst); err != nil {
		return err
	}
	if err := b.checkSlot(src); err != nil {
		return err
	}
	if n < 0 || n > len(b.hist[src]) {
		return fmt.Errorf("batcher: copy %d tokens of slot %d: it holds %d", n, src, len(b.hist[src]))
	}
	if dst != src && n > 0 {
		if err := b.copyCells(dst, src, n); err != nil {
			return err
		}
	}
	b.hist[dst] = append(b.hist[dst][:0], b.hist[src][:n]...)
	return nil
}

// copyCells asks the backend to copy the KV cells, under the model's read
// lock as a step holds it.
func (b *Batcher) copyCells(dst, src, n int) error {
	m := b.m
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return ErrClosed
	}
	c, ok := b.s.st.(backends.SeqCopier)
	if !ok {
		return fmt.Errorf("batcher: the %s backend cannot copy KV cells between sequences", m.Backend)
	}
	return c.CopySeq(dst, src, n)
}

// claim holds the Batcher for one call (see Session.claim); a nil return
// must be paired with b.s.unclaim.
func (b *Batcher) claim() error {
	if b.s == nil {
		return ErrSessionClosed
	}
	return b.s.claim()
}

func (b *Batcher) checkSlot(slot int) error {
	if slot < 0 || slot >= len(b.hist) {
		return fmt.Errorf("batcher: slot %d of %d", slot, len(b.hist))
	}
	return nil
}

// Step appends each input's tokens to its slot and returns, for each
// input with Logits set, the logits of its last token ([vocab], the
// caller's; nil for the others). A slot may appear once per step. The
// tokens of all inputs run together, in batches of at most MaxTokens (one
// when they fit); ctx is checked between batches. On error no slot has
// changed.
func (b *Batcher) Step(ctx context.Context, in []SeqInput) ([][]float32, error) {
	if err := b.claim(); err != nil {
		return nil, err
	}
	defer b.s.unclaim()
	if err := b.check(in); err != nil {
		return nil, err
	}
	out := make([][]float32, len(in))
	limit := b.MaxTokens()
	// The inputs' tokens in order, cut every limit tokens.
	total := 0
	for _, x := range in {
		total += len(x.Tokens)
	}
	i, j := 0, 0 // the next token to pack: input i's token j
	for done := 0; done < total; {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("batcher: step stopped after %d of %d tokens: %w", done, total, err)
		}
		n := min(limit, total-done)
		b.pack(in, &i, &j, n)
		if err := b.run(in, out); err != nil {
			return nil, err
		}
		done += n
	}
	for _, x := range in {
		b.hist[x.Slot] = append(b.hist[x.Slot], x.Tokens...)
	}
	return out, nil
}

// pack fills b.batch with the next n tokens of the step, from input i's
// token j on, and the rows of the inputs with Logits whose last token it
// holds; it advances i and j past them.
func (b *Batcher) pack(in []SeqInput, i, j *int, n int) {
	bt := &b.batch
	bt.Tokens, bt.Positions, bt.Seqs, bt.Rows = bt.Tokens[:0], bt.Positions[:0], bt.Seqs[:0], bt.Rows[:0]
	b.want = b.want[:0]
	for len(bt.Tokens) < n {
		x := in[*i]
		take := min(len(x.Tokens)-*j, n-len(bt.Tokens))
		pos := len(b.hist[x.Slot]) + *j
		for k := range take {
			bt.Tokens = append(bt.Tokens, x.Tokens[*j+k])
			bt.Positions = append(bt.Positions, int32(pos+k))
			bt.Seqs = append(bt.Seqs, int32(x.Slot))
		}
		*j += take
		if *j == len(x.Tokens) {
			if x.Logits {
				bt.Rows = append(bt.Rows, int32(len(bt.Tokens)-1))
				b.want = append(b.want, *i)
			}
			*i, *j = *i+1, 0
		}
	}
	if len(bt.Rows) == 0 {
		// The contract asks for at least one row; the last token's
		// logits are computed and dropped.
		bt.Rows = append(bt.Rows, int32(len(bt.Tokens)-1))
		b.want = append(b.want, -1)
	}
}

// run evaluates the packed batch, holding the model's read lock while
// the kernels run (as Session.evalBatch does), and copies out the logits
// of the rows asked for.
func (b *Batcher) run(in []SeqInput, out [][]float32) error {
	m := b.m
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return ErrClosed
	}
	logits, err := b.s.st.Run(b.batch)
	if err != nil {
		return err
	}
	if err := m.Verify(); err != nil {
		return err
	}
	vocab := len(logits) / len(b.batch.Rows)
	for r, i := range b.want {
		if i >= 0 {
			out[i] = append([]float32(nil), logits[r*vocab:(r+1)*vocab]...)
		}
	}
	return nil
}

// check validates a step's inputs before anything runs.
func (b *Batcher) check(in []SeqInput) error {
	if len(in) == 0 {
		return fmt.Errorf("batcher: a step with no inputs")
	}
	seen := make(map[int]bool, len(in))
	vocab := b.m.VocabSize()
	for _, x := range in {
		if err := b.checkSlot(x.Slot); err != nil {
			return err
		}
		if seen[x.Slot] {
			return fmt.Errorf("batcher: slot %d appears twice in one step", x.Slot)
		}
		seen[x.Slot] = true
		if len(x.Tokens) == 0 {
			return fmt.Errorf("batcher: slot %d has no tokens in this step", x.Slot)
		}
		for _, id := range x.Tokens {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("batcher: slot %d: token %d is outside the vocabulary of %d", x.Slot, id, vocab)
			}
		}
		if h := len(b.hist[x.Slot]); h+len(x.Tokens) > b.ctx {
			return fmt.Errorf("%w: slot %d holds %d tokens + %d new, its context is %d", ErrContextFull, x.Slot, h, len(x.Tokens), b.ctx)
		}
	}
	return nil
}

// Close releases every slot's memory.
func (b *Batcher) Close() error {
	if b.s == nil {
		return nil
	}
	err := b.s.Close()
	if err == nil {
		b.s = nil
	}
	return err
}
