package sample

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// freshRand returns a generator with a new seed each run, logged so that a
// failure can be replayed.
func freshRand(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("input seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>7|1))
}

// randomLogits returns n logits uniform in [lo, hi), never all equal.
func randomLogits(r *rand.Rand, n int, lo, hi float32) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = lo + (hi-lo)*r.Float32()
	}
	return l
}

// softmax is the test's own float64 softmax, temperature applied.
func softmax(logits []float32, temp float64) []float64 {
	peak := math.Inf(-1)
	for _, l := range logits {
		peak = math.Max(peak, float64(l)/temp)
	}
	p := make([]float64, len(logits))
	var sum float64
	for i, l := range logits {
		p[i] = math.Exp(float64(l)/temp - peak)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

func mustNew(t testing.TB, p Params, vocab int) *Sampler {
	t.Helper()
	s, err := New(p, vocab)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// plain returns parameters with every stage off except the temperature.
func plain(temp float32) Params {
	return Params{Temp: temp, TopP: 1, RepeatPenalty: 1}
}

func idSet(c []candidate) map[int32]bool {
	m := make(map[int32]bool, len(c))
	for _, x := range c {
		m[x.id] = true
	}
	return m
}

func candidates(logits []float32) []candidate {
	c := make([]candidate, len(logits))
	for i, l := range logits {
		c[i] = candidate{id: int32(i), logit: l}
	}
	return c
}

func ids(c []candidate) []int32 {
	out := make([]int32, len(c))
	for i, x := range c {
		out[i] = x.id
	}
	return out
}
