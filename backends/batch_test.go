package backends

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckBatchSegments(t *testing.T) {
	b := Batch{
		Tokens:    []int32{5, 6, 7, 8, 9, 10},
		Positions: []int32{40, 0, 1, 2, 7, 3},
		Seqs:      []int32{2, 0, 0, 0, 1, 3},
		Rows:      []int32{0, 3, 5},
	}
	segs, err := CheckBatch(b, 4, 64, 8, nil)
	require.NoError(t, err)
	assert.Equal(t, []Segment{{Seq: 2, Start: 0, N: 1, Pos: 40}, {Seq: 0, Start: 1, N: 3, Pos: 0}, {Seq: 1, Start: 4, N: 1, Pos: 7}, {Seq: 3, Start: 5, N: 1, Pos: 3}}, segs)
	// nil Seqs: one sequence, 0.
	segs, err = CheckBatch(Batch{Tokens: []int32{1, 2}, Positions: []int32{3, 4}, Rows: []int32{1}}, 1, 8, 8, segs)
	require.NoError(t, err)
	assert.Equal(t, []Segment{{Seq: 0, Start: 0, N: 2, Pos: 3}}, segs)
}

func TestCheckBatchErrors(t *testing.T) {
	ok := func() Batch {
		return Batch{Tokens: []int32{1, 2, 3}, Positions: []int32{0, 1, 5}, Seqs: []int32{0, 0, 1}, Rows: []int32{2}}
	}
	for _, c := range []struct {
		name string
		edit func(b *Batch)
		want string
	}{
		{"empty", func(b *Batch) { *b = Batch{} }, "empty batch"},
		{"too many", func(b *Batch) {
			b.Tokens, b.Positions, b.Seqs = make([]int32, 9), make([]int32, 9), make([]int32, 9)
		}, "exceeds the compiled maximum"},
		{"positions", func(b *Batch) { b.Positions = b.Positions[:2] }, "2 positions for 3 tokens"},
		{"seqs length", func(b *Batch) { b.Seqs = b.Seqs[:2] }, "2 sequence ids for 3 tokens"},
		{"no rows", func(b *Batch) { b.Rows = nil }, "0 output rows"},
		{"row outside", func(b *Batch) { b.Rows = []int32{3} }, "outside the batch"},
		{"negative sequence", func(b *Batch) { b.Seqs[2] = -1 }, "sequence -1 of 2"},
		{"sequence too big", func(b *Batch) { b.Seqs[2] = 2 }, "sequence 2 of 2"},
		{"not consecutive", func(b *Batch) { b.Positions[1] = 2 }, "consecutive"},
		{"split sequence", func(b *Batch) { b.Seqs = []int32{0, 1, 0}; b.Positions = []int32{0, 5, 1} }, "not contiguous"},
		{"context overflow", func(b *Batch) { b.Positions[2] = 16 }, "context overflow"},
		{"negative position", func(b *Batch) { b.Positions = []int32{-1, 0, 5} }, "context overflow"},
	} {
		b := ok()
		_, err := CheckBatch(b, 2, 16, 8, nil)
		require.NoError(t, err)
		c.edit(&b)
		_, err = CheckBatch(b, 2, 16, 8, nil)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}

func TestCheckCopy(t *testing.T) {
	require.NoError(t, CheckCopy(1, 0, 16, 2, 16))
	require.Error(t, CheckCopy(2, 0, 1, 2, 16))
	require.Error(t, CheckCopy(0, -1, 1, 2, 16))
	require.Error(t, CheckCopy(0, 1, 17, 2, 16))
	require.Error(t, CheckCopy(0, 1, -1, 2, 16))
}
