package backends

import "fmt"

// SeqCopier is an optional State capability: CopySeq makes the first n
// KV cells of sequence dst a copy of sequence src's (a shared prefix, so
// dst need not compute it again); src is unchanged, and dst's cells from
// n on keep whatever they held.
type SeqCopier interface {
	CopySeq(dst, src, n int) error
}

// CheckCopy validates CopySeq's arguments for a State of seqs sequences
// of ctx positions.
func CheckCopy(dst, src, n, seqs, ctx int) error {
	switch {
	case dst < 0 || dst >= seqs || src < 0 || src >= seqs:
		return fmt.Errorf("copy of KV cells from sequence %d to %d: the State has %d", src, dst, seqs)
	case n < 0 || n > ctx:
		return fmt.Errorf("copy of %d KV cells: a sequence has %d", n, ctx)
	}
	return nil
}

// Segment is a run of a batch's tokens of one sequence: tokens
// [Start, Start+N) of the batch are Seq's positions Pos..Pos+N-1.
type Segment struct {
	Seq, Start, N, Pos int
}

// CheckBatch validates b for a State of seqs sequences of ctx positions
// each and batches of at most maxTokens tokens, and returns its
// segments in batch order (one per sequence, since a sequence's tokens
// are contiguous). segs is reused when it has room, so that a decode loop
// allocates nothing. Every backend checks batches with it, so they refuse
// the same batches with the same messages.
func CheckBatch(b Batch, seqs, ctx, maxTokens int, segs []Segment) ([]Segment, error) {
	n := len(b.Tokens)
	switch {
	case n == 0:
		return nil, fmt.Errorf("empty batch")
	case n > maxTokens:
		return nil, fmt.Errorf("batch of %d tokens exceeds the compiled maximum %d", n, maxTokens)
	case len(b.Positions) != n:
		return nil, fmt.Errorf("%d positions for %d tokens", len(b.Positions), n)
	case b.Seqs != nil && len(b.Seqs) != n:
		return nil, fmt.Errorf("%d sequence ids for %d tokens", len(b.Seqs), n)
	case len(b.Rows) == 0 || len(b.Rows) > n:
		return nil, fmt.Errorf("%d output rows for a batch of %d", len(b.Rows), n)
	}
	for _, r := range b.Rows {
		if r < 0 || int(r) >= n {
			return nil, fmt.Errorf("output row %d outside the batch of %d", r, n)
		}
	}
	segs = segs[:0]
	for i := 0; i < n; {
		seg, err := segmentAt(b, i, seqs, ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range segs {
			if o.Seq == seg.Seq {
				return nil, fmt.Errorf("the tokens of sequence %d are not contiguous in the batch (at %d and %d)", seg.Seq, o.Start, seg.Start)
			}
		}
		segs = append(segs, seg)
		i += seg.N
	}
	return segs, nil
}

// SeqOf is the sequence of batch token i.
func (b Batch) SeqOf(i int) int {
	if b.Seqs == nil {
		return 0
	}
	return int(b.Seqs[i])
}

// segmentAt reads the run of one sequence's tokens starting at batch
// index i and checks its sequence and positions.
func segmentAt(b Batch, i, seqs, ctx int) (Segment, error) {
	s := b.SeqOf(i)
	if s < 0 || s >= seqs {
		return Segment{}, fmt.Errorf("token %d: sequence %d of %d", i, s, seqs)
	}
	seg := Segment{Seq: s, Start: i, Pos: int(b.Positions[i])}
	for j := i; j < len(b.Tokens) && b.SeqOf(j) == s; j++ {
		if p := int(b.Positions[j]); p != seg.Pos+j-i {
			return Segment{}, fmt.Errorf("positions must be consecutive: got %d at index %d after %d", p, j, seg.Pos)
		}
		seg.N++
	}
	if seg.Pos < 0 || seg.Pos+seg.N > ctx {
		return Segment{}, fmt.Errorf("context overflow: positions %d..%d do not fit a context of %d", seg.Pos, seg.Pos+seg.N-1, ctx)
	}
	return seg, nil
}
