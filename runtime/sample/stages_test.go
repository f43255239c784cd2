package sample

import (
	"math"
	"slices"
	"sort"
	"testing"
)

func TestTopKSurvivors(t *testing.T) {
	c := candidates([]float32{0.1, 2, -1, 3, 2, 0.5})
	got := ids(selectTopK(c, 3))
	if want := []int32{3, 1, 4}; !slices.Equal(got, want) {
		t.Fatalf("top-3 = %v, want %v (ties to the lower id)", got, want)
	}
}

// referenceTopK sorts everything with its own comparator and cuts.
func referenceTopK(logits []float32, k int) []int32 {
	order := make([]int32, len(logits))
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	return order[:min(k, len(order))]
}

func TestTopKMatchesFullSort(t *testing.T) {
	r := freshRand(t)
	for trial := 0; trial < 40; trial++ {
		n := 1 + r.IntN(5000)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(r.IntN(200)-100) / 8 // many ties
		}
		for _, k := range []int{1, 1 + r.IntN(60), 40, 129, 1 + r.IntN(n), n - 1, n, n + 3} {
			if k < 1 {
				continue
			}
			got := ids(selectTopK(candidates(logits), k))
			if want := referenceTopK(logits, k); !slices.Equal(got, want) {
				t.Fatalf("n=%d k=%d: got %v, want %v", n, k, got[:min(8, len(got))], want[:min(8, len(want))])
			}
		}
	}
}

// probLogits returns logits whose softmax is exactly probs (up to rounding).
func probLogits(probs ...float64) []float32 {
	l := make([]float32, len(probs))
	for i, p := range probs {
		l[i] = float32(math.Log(p))
	}
	return l
}

func TestTopPSurvivors(t *testing.T) {
	logits := probLogits(0.5, 0.3, 0.15, 0.05)
	for _, c := range []struct {
		p    float32
		want int
	}{{0, 1}, {0.4, 1}, {0.75, 2}, {0.85, 3}, {0.99, 4}, {1, 4}} {
		got := ids(topP(candidates(logits), c.p))
		if want := []int32{0, 1, 2, 3}[:c.want]; !slices.Equal(got, want) {
			t.Errorf("top-p %g kept %v, want %v", c.p, got, want)
		}
	}
}

func TestMinPSurvivors(t *testing.T) {
	logits := probLogits(0.5, 0.3, 0.15, 0.05)
	for _, c := range []struct {
		p    float32
		want int
	}{{0, 4}, {0.05, 4}, {0.2, 3}, {0.5, 2}, {0.7, 1}, {1, 1}} {
		want := []int32{0, 1, 2, 3}[:c.want]
		if got := ids(minP(candidates(logits), c.p, true)); !slices.Equal(got, want) {
			t.Errorf("sorted min-p %g kept %v, want %v", c.p, got, want)
		}
		// The unsorted path must keep the same set.
		rev := candidates(logits)
		slices.Reverse(rev)
		got := idSet(minP(rev, c.p, false))
		if len(got) != len(want) || !allIn(want, got) {
			t.Errorf("unsorted min-p %g kept %v, want %v", c.p, got, want)
		}
	}
}

func allIn(ids []int32, set map[int32]bool) bool {
	for _, id := range ids {
		if !set[id] {
			return false
		}
	}
	return true
}

func TestMinPSortedAgreesWithUnsorted(t *testing.T) {
	r := freshRand(t)
	for trial := 0; trial < 50; trial++ {
		logits := randomLogits(r, 1+r.IntN(400), -8, 8)
		p := r.Float32()
		c := candidates(logits)
		unsorted := idSet(minP(slices.Clone(c), p, false))
		sortByRank(c)
		sorted := minP(c, p, true)
		if len(sorted) != len(unsorted) || !allIn(ids(sorted), unsorted) {
			t.Fatalf("p=%g: sorted kept %d, unsorted %d", p, len(sorted), len(unsorted))
		}
	}
}

// Each stage alone through Sample: every draw is a survivor and every
// survivor is drawn.
func TestSampleStagesAlone(t *testing.T) {
	logits := probLogits(0.05, 0.5, 0.15, 0.3) // rank order: 1, 3, 2, 0
	withTopK, withTopP, withMinP := plain(1), plain(1), plain(1)
	withTopK.TopK = 2
	withTopP.TopP = 0.9
	withMinP.MinP = 0.25
	cases := []struct {
		name string
		p    Params
		want []int32
	}{
		{"none", plain(1), []int32{0, 1, 2, 3}},
		{"top-k 2", withTopK, []int32{1, 3}},
		{"top-p 0.9", withTopP, []int32{1, 3, 2}},
		{"min-p 0.25", withMinP, []int32{1, 3, 2}},
	}
	r := freshRand(t)
	for _, c := range cases {
		c.p.Seed = r.Uint64()
		s := mustNew(t, c.p, len(logits))
		seen := map[int32]bool{}
		for range 3000 {
			seen[s.Sample(logits)] = true
		}
		if len(seen) != len(c.want) || !allIn(c.want, seen) {
			t.Errorf("%s: drew %v, want exactly %v", c.name, seen, c.want)
		}
	}
}

// The unsorted top-p must keep the best-first prefix whose float64 mass
// first reaches p, up to float32 rounding at the boundary.
func TestTopPUnsortedMatchesReference(t *testing.T) {
	r := freshRand(t)
	const tol = 1e-4
	for trial := 0; trial < 40; trial++ {
		n := 1 + r.IntN(20000)
		spread := float32(1 + r.IntN(30)) // flat to very peaked
		logits := randomLogits(r, n, -spread, spread)
		p := r.Float32()
		got := topPUnsorted(candidates(logits), p)
		want := referenceTopK(logits, len(got))
		if !slices.Equal(ids(got), want) {
			t.Fatalf("n=%d p=%g: kept ids are not the best-first prefix", n, p)
		}
		probs := softmax(logits, 1)
		var before float64
		for _, id := range want[:len(want)-1] {
			before += probs[id]
		}
		after := before + probs[want[len(want)-1]]
		if before >= float64(p)+tol || (after < float64(p)-tol && len(got) < n) {
			t.Fatalf("n=%d p=%g: kept %d tokens, mass before last %g, with it %g",
				n, p, len(got), before, after)
		}
	}
}
