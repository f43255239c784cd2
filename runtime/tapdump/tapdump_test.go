package tapdump

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	abs, rel := Compare([]float32{1, -4, 2}, []float32{1, -3.5, 2})
	assert.InDelta(t, 0.5, abs, 1e-9)
	assert.InDelta(t, 0.125, rel, 1e-9, "over the largest magnitude")
	abs, rel = Compare([]float32{0, 0}, []float32{0, 0})
	assert.Zero(t, abs)
	assert.Zero(t, rel)
	_, rel = Compare([]float32{1, nan}, []float32{1, 2})
	assert.True(t, math.IsInf(rel, 1), "a NaN on one side diverges")
	_, rel = Compare([]float32{1, nan, inf}, []float32{1, nan, inf})
	assert.Zero(t, rel, "NaNs and infinities in the same places agree")
	_, rel = Compare([]float32{inf}, []float32{-inf})
	assert.True(t, math.IsInf(rel, 1))
}

func TestDiffMatchesByStepNameAndOccurrence(t *testing.T) {
	write := func(entries []Entry, vals [][]float32) *Dump {
		dir := filepath.Join(t.TempDir(), "d")
		w, err := Create(dir, Meta{Source: "m"})
		require.NoError(t, err)
		for i, e := range entries {
			require.NoError(t, w.Write(e, vals[i]))
		}
		require.NoError(t, w.Close())
		d, err := Read(dir)
		require.NoError(t, err)
		assert.Equal(t, "m", d.Meta.Source)
		return d
	}
	// B numbers its nodes differently and has an extra value and another
	// shape for "y": matching is by name, never by node ID.
	a := write([]Entry{{Node: 1, Name: "x", Rows: 1, Width: 2}, {Node: 2, Name: "y", Rows: 1, Width: 2}, {Node: 3, Name: "x", Rows: 1, Width: 2}},
		[][]float32{{1, 2}, {3, 4}, {5, 6}})
	b := write([]Entry{{Node: 7, Name: "x", Rows: 1, Width: 2}, {Node: 9, Name: "z", Rows: 1, Width: 1}, {Node: 8, Name: "x", Rows: 1, Width: 2}, {Node: 10, Name: "y", Rows: 2, Width: 1}},
		[][]float32{{1, 2}, {0}, {5, 6.5}, {3, 4}})
	r, err := Diff(a, b, 0.01)
	require.NoError(t, err)
	require.Len(t, r.Compared, 3)
	assert.Equal(t, "[1,2] vs [2,1]", r.Compared[1].Shape)
	assert.True(t, r.Compared[1].Diverges)
	assert.Equal(t, 1, r.First, "y, the first in A's order")
	assert.InDelta(t, 0.5/6.5, r.Compared[2].Rel, 1e-6, "the second x against the second x")
	assert.Equal(t, []string{"step 0 z"}, r.OnlyB)
	assert.Empty(t, r.OnlyA)

	_, err = Create(t.TempDir()+"/new/dir", Meta{})
	require.NoError(t, err, "a new folder is made")
	w, err := Create(filepath.Join(t.TempDir(), "w"), Meta{})
	require.NoError(t, err)
	assert.ErrorContains(t, w.Write(Entry{Name: "q", Rows: 2, Width: 2}, []float32{1}), "has 1 values, not 2×2")
}
