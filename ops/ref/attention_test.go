package ref

import (
	"math"
	"testing"
)

type attnCase struct {
	nTok, pos0, nHead, nKVHead, headDim int
	f16                                 bool
}

// newCache fills rows [0, n) of a fresh cache with random values through
// Store and poisons the rows after them, which Attention must not read.
func newCache(tc attnCase, rows [][]float32, capacity int) KV {
	rowLen := tc.nKVHead * tc.headDim
	c := KV{RowLen: rowLen}
	if tc.f16 {
		c.F16 = make([]uint16, capacity*rowLen)
		for i := range c.F16 {
			c.F16[i] = 0x7e00 // NaN
		}
	} else {
		c.F32 = make([]float32, capacity*rowLen)
		poison(c.F32)
	}
	for p, r := range rows {
		c.Store(p, r)
	}
	return c
}

// cacheValue is element i of row p as the cache holds it, rounded with
// package quant's independent conversion.
func cacheValue(tc attnCase, rows [][]float32, p, i int) float64 {
	if tc.f16 {
		return f16Of(rows[p][i])
	}
	return float64(rows[p][i])
}

func TestAttentionAgainstFloat64(t *testing.T) {
	rng := newRNG(t)
	cases := []attnCase{
		{1, 0, 1, 1, 8, false}, {1, 0, 4, 4, 16, true},
		{5, 0, 4, 2, 64, false}, {5, 0, 4, 2, 64, true},
		{3, 37, 8, 2, 16, true}, {7, 100, 8, 1, 8, true}, // GQA 4 and 8
		{1, 300, 8, 8, 128, true}, {1, 300, 8, 8, 128, false},
		{4, 61, 2, 2, 128, true}, {6, 29, 4, 4, 24, true}, // headDim not a multiple of 16
		{8, 2040, 2, 1, 16, true}, {1, 2047, 4, 2, 64, false}, // positions up to 2048
	}
	for _, tc := range cases {
		nKV := tc.pos0 + tc.nTok
		kRows, vRows := make([][]float32, nKV), make([][]float32, nKV)
		for p := range kRows {
			kRows[p] = randVec(rng, tc.nKVHead*tc.headDim, 1)
			vRows[p] = randVec(rng, tc.nKVHead*tc.headDim, 1)
		}
		k, v := newCache(tc, kRows, nKV+9), newCache(tc, vRows, nKV+9)
		q := randVec(rng, tc.nTok*tc.nHead*tc.headDim, 1.5)
		scale := float32(1 / math.Sqrt(float64(tc.headDim)))
		out := make([]float32, len(q))
		poison(out)
		scratch := make([]float32, AttentionScratch(tc.nTok, tc.pos0))
		poison(scratch)
		Attention(out, q, k, v, tc.nTok, tc.pos0, tc.nHead, tc.nKVHead, tc.headDim, scale, scratch)
		compareAttention(t, tc, q, kRows, vRows, scale, out)
	}
}

// compareAttention recomputes every output in float64, rounding Q and the
// probabilities to binary16 where llama.cpp does for an f16 cache. Its
// tolerance is the float32 error bound of the scores, the softmax and P·V;
// a probability within that bound of a binary16 rounding boundary may round
// either way and adds its full step.
func compareAttention(t *testing.T, tc attnCase, q []float32, kRows, vRows [][]float32, scale float32, out []float32) {
	t.Helper()
	group := tc.nHead / tc.nKVHead
	for tk := 0; tk < tc.nTok; tk++ {
		visible := tc.pos0 + tk + 1
		for h := 0; h < tc.nHead; h++ {
			base, kvOff := (tk*tc.nHead+h)*tc.headDim, h/group*tc.headDim
			probs, scoreErr := refProbs(tc, q[base:base+tc.headDim], kRows[:visible], kvOff, float64(scale))
			rel := 2*scoreErr + 8*0x1p-24
			for d := 0; d < tc.headDim; d++ {
				var want, mag, flips float64
				for p, pr := range probs {
					vv := cacheValue(tc, vRows, p, kvOff+d)
					if tc.f16 {
						lo, hi := f16Of(float32(pr*(1-rel))), f16Of(float32(pr*(1+rel)))
						flips += (hi - lo) * math.Abs(vv)
						pr = f16Of(float32(pr))
					} else {
						flips += rel * pr * math.Abs(vv)
					}
					want += pr * vv
					mag += math.Abs(pr * vv)
				}
				tol := flips + float64(len(probs)/16+8)*0x1p-24*mag
				if !within(t, "attention", out[base+d], want, tol) {
					t.Fatalf("case %+v token %d head %d dim %d", tc, tk, h, d)
				}
			}
		}
	}
}

// refProbs returns the float64 softmax of one query head's scaled scores and
// the float32 error bound of the largest scaled score.
func refProbs(tc attnCase, qh []float32, kRows [][]float32, kvOff int, scale float64) ([]float64, float64) {
	scores := make([]float64, len(kRows))
	maxScore, maxErr := math.Inf(-1), 0.0
	for p := range kRows {
		var s, mag float64
		for i, x := range qh {
			qv := float64(x)
			if tc.f16 {
				qv = f16Of(x)
			}
			kv := cacheValue(tc, kRows, p, kvOff+i)
			s += qv * kv
			mag += math.Abs(qv * kv)
		}
		scores[p] = s * scale
		maxScore = math.Max(maxScore, scores[p])
		maxErr = math.Max(maxErr, (float64(len(qh)/16+8)*0x1p-24*mag+1e-9)*scale)
	}
	var sum float64
	for p := range scores {
		scores[p] = math.Exp(scores[p] - maxScore)
		sum += scores[p]
	}
	for p := range scores {
		scores[p] /= sum
	}
	return scores, maxErr
}

func TestAttentionDeterministic(t *testing.T) {
	rng := newRNG(t)
	tc := attnCase{nTok: 4, pos0: 45, nHead: 4, nKVHead: 2, headDim: 64, f16: true}
	rows := make([][]float32, tc.pos0+tc.nTok)
	for p := range rows {
		rows[p] = randVec(rng, tc.nKVHead*tc.headDim, 1)
	}
	k, v := newCache(tc, rows, len(rows)), newCache(tc, rows, len(rows))
	q := randVec(rng, tc.nTok*tc.nHead*tc.headDim, 1)
	var first []float32
	for run := 0; run < 3; run++ {
		out := make([]float32, len(q))
		poison(out)
		scratch := make([]float32, AttentionScratch(tc.nTok, tc.pos0))
		poison(scratch)
		Attention(out, q, k, v, tc.nTok, tc.pos0, tc.nHead, tc.nKVHead, tc.headDim, 0.125, scratch)
		if first == nil {
			first = out
			continue
		}
		for i := range out {
			if math.Float32bits(out[i]) != math.Float32bits(first[i]) {
				t.Fatalf("run %d differs at %d: %g vs %g", run, i, out[i], first[i])
			}
		}
	}
}

func TestKVStore(t *testing.T) {
	rng := newRNG(t)
	x := randVec(rng, 24, 100)
	h := KV{F16: make([]uint16, 3*24), RowLen: 24}
	f := KV{F32: make([]float32, 3*24), RowLen: 24}
	h.Store(2, x)
	f.Store(2, x)
	for i, v := range x {
		if float64(h.at(2, i)) != f16Of(v) || f.at(2, i) != v || h.F16[i] != 0 {
			t.Fatalf("element %d: f16 %g f32 %g from %g", i, h.at(2, i), f.at(2, i), v)
		}
	}
}

// at returns element i of row p of c as float32.
func (c KV) at(p, i int) float32 {
	if c.F16 != nil {
		return halfToFloat(c.F16[p*c.RowLen+i])
	}
	return c.F32[p*c.RowLen+i]
}
