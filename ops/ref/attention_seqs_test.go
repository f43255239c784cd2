package ref

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAttentionSeqsIsEachSequenceAlone checks that a batch of three
// sequences' runs, in a mixed order, gives each run exactly what
// Attention gives that run alone against its own cache.
func TestAttentionSeqsIsEachSequenceAlone(t *testing.T) {
	rng := newRNG(t)
	tc := attnCase{nHead: 4, nKVHead: 2, headDim: 16, f16: true}
	w, qw := tc.nKVHead*tc.headDim, tc.nHead*tc.headDim
	runs := []SeqRun{{Seq: 2, Start: 0, N: 1, Pos: 40}, {Seq: 0, Start: 1, N: 6, Pos: 0}, {Seq: 1, Start: 7, N: 1, Pos: 9}}
	var k, v []KV
	for s := range 3 {
		n := 0
		for _, r := range runs {
			if r.Seq == s {
				n = r.Pos + r.N
			}
		}
		kr, vr := make([][]float32, n), make([][]float32, n)
		for p := range kr {
			kr[p], vr[p] = randVec(rng, w, 1), randVec(rng, w, 1)
		}
		// Each cache is poisoned past its sequence's last position.
		k, v = append(k, newCache(tc, kr, n+5)), append(v, newCache(tc, vr, n+5))
	}
	q := randVec(rng, 8*qw, 1.5)
	got := make([]float32, len(q))
	AttentionSeqs(got, q, k, v, runs, tc.nHead, tc.nKVHead, tc.headDim, 0.25, make([]float32, AttentionScratch(6, 40)))
	for _, r := range runs {
		want := make([]float32, r.N*qw)
		Attention(want, q[r.Start*qw:(r.Start+r.N)*qw], k[r.Seq], v[r.Seq], r.N, r.Pos, tc.nHead, tc.nKVHead, tc.headDim, 0.25, make([]float32, AttentionScratch(r.N, r.Pos)))
		for i, x := range want {
			y := got[r.Start*qw+i]
			require.False(t, math.IsNaN(float64(y)), "sequence %d read a poisoned cell", r.Seq)
			require.Equal(t, math.Float32bits(x), math.Float32bits(y), "sequence %d element %d", r.Seq, i)
		}
	}
}
