package sample

import (
	"math"
	"slices"
	"testing"
)

// chiSquare compares observed counts with expected probabilities; a token
// drawn that should never be makes it infinite.
func chiSquare(counts []int, probs []float64, draws int) float64 {
	var x float64
	for i, p := range probs {
		e := p * float64(draws)
		if e == 0 {
			if counts[i] > 0 {
				return math.Inf(1)
			}
			continue
		}
		d := float64(counts[i]) - e
		x += d * d / e
	}
	return x
}

// chiSquareBound is the chi-square value exceeded with probability about
// 1e-6 for df degrees of freedom (Wilson–Hilferty, slightly conservative).
func chiSquareBound(df int) float64 {
	const z = 4.7534 // standard normal upper 1e-6 quantile
	k := float64(df)
	v := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * v * v * v
}

// truncated returns want's distribution restricted to the ids in keep and
// renormalized; other ids get 0.
func truncated(probs []float64, keep []int32) []float64 {
	out := make([]float64, len(probs))
	var sum float64
	for _, id := range keep {
		out[id] = probs[id]
		sum += probs[id]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// drawCounts samples draws times from logits, never accepting tokens.
func drawCounts(t *testing.T, p Params, logits []float32, draws int) []int {
	s := mustNew(t, p, len(logits))
	counts := make([]int, len(logits))
	for range draws {
		counts[s.Sample(logits)]++
	}
	return counts
}

// checkFit fails unless counts fit want, and unless they clearly misfit
// every broken alternative, so the test has the power to catch those.
func checkFit(t *testing.T, name string, counts []int, want []float64, broken map[string][]float64) {
	t.Helper()
	draws, df := 0, -1
	var probs []float64
	var obs []int
	for i, p := range want {
		draws += counts[i]
		if p == 0 {
			if counts[i] != 0 {
				t.Errorf("%s: token %d drawn %d times, want never", name, i, counts[i])
			}
			continue
		}
		probs, obs = append(probs, p), append(obs, counts[i])
		df++
	}
	bound := chiSquareBound(df)
	if x := chiSquare(obs, probs, draws); x > bound {
		t.Errorf("%s: chi-square %.1f > %.1f (df %d); counts %v, want %v", name, x, bound, df, counts, want)
	}
	for what, alt := range broken {
		if x := chiSquare(counts, alt, draws); !(x > bound) {
			t.Errorf("%s: cannot tell a sampler that %s from a good one (chi-square %.1f)", name, what, x)
		}
	}
}

func rotate(p []float64) []float64 { return append(slices.Clone(p[1:]), p[0]) }

func uniform(n int) []float64 {
	u := make([]float64, n)
	for i := range u {
		u[i] = 1 / float64(n)
	}
	return u
}

func TestDistributionTempOneNoTruncation(t *testing.T) {
	r := freshRand(t)
	logits := randomLogits(r, 10, -1.5, 1.5)
	p := plain(1)
	p.Seed = r.Uint64()
	want := softmax(logits, 1)
	counts := drawCounts(t, p, logits, 100000)
	checkFit(t, "temp 1", counts, want, map[string][]float64{
		"is off by one token": rotate(want),
		"draws uniformly":     uniform(len(want)),
		"squares the probs":   softmax(logits, 0.5),
	})
}

func TestDistributionTemperature(t *testing.T) {
	r := freshRand(t)
	logits := randomLogits(r, 8, -1, 1)
	p := plain(0.6)
	p.Seed = r.Uint64()
	want := softmax(logits, 0.6)
	counts := drawCounts(t, p, logits, 100000)
	checkFit(t, "temp 0.6", counts, want, map[string][]float64{
		"ignores the temperature":   softmax(logits, 1),
		"multiplies by temperature": softmax(logits, 1/0.6),
	})
}

// Top-k and min-p judge probabilities at temperature 1; the draw then uses
// the temperature over the survivors only.
func TestDistributionTruncatedChain(t *testing.T) {
	r := freshRand(t)
	logits := []float32{0.2, 2.1, -1, 1.4, 1.9, 0.7, -0.4, 1.0}
	for i := range logits {
		logits[i] += 0.05 * r.Float32() // fresh, but keeps the hand-made order
	}
	p := plain(0.7)
	p.TopK, p.MinP, p.Seed = 5, 0.45, r.Uint64()
	// Top 5: ids 1, 4, 3, 7, 5. Min-p 0.45 at temp 1 keeps logits within
	// ln(0.45) = -0.80 of the best (2.1): ids 1, 4, 3 (7 is 1.1 below).
	keep := []int32{1, 4, 3}
	want := truncated(softmax(logits, 0.7), keep)
	counts := drawCounts(t, p, logits, 60000)
	checkFit(t, "top-k+min-p+temp", counts, want, map[string][]float64{
		"applies temperature before min-p": truncated(softmax(logits, 0.7), []int32{1, 4}),
		"ignores the temperature":          truncated(softmax(logits, 1), keep),
	})
}
