package sample

import "slices"

// candidate is one token still in the running.
type candidate struct {
	id    int32
	logit float32
}

// ranksBefore orders candidates by descending logit, ties to the lower id,
// so every stage and every run sees the same order.
func ranksBefore(a, b candidate) bool {
	return a.logit > b.logit || (a.logit == b.logit && a.id < b.id)
}

func compareRank(a, b candidate) int {
	switch {
	case ranksBefore(a, b):
		return -1
	case ranksBefore(b, a):
		return 1
	}
	return 0
}

func sortByRank(c []candidate) { slices.SortFunc(c, compareRank) }

// selectTopK moves the k best candidates, sorted, to the front of c and
// returns them; the rest stay behind them in some order. It keeps a heap of the best k seen so far whose root is the
// worst of them: O(n log k) instead of a full sort of the vocabulary.
func selectTopK(c []candidate, k int) []candidate {
	if k >= len(c) {
		sortByRank(c)
		return c
	}
	h := c[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for i := k; i < len(c); i++ {
		if ranksBefore(c[i], h[0]) {
			h[0], c[i] = c[i], h[0] // swap, so c stays a permutation
			siftDown(h, 0)
		}
	}
	sortByRank(h)
	return h
}

// siftDown restores the heap property (every parent ranks after its
// children) below index i.
func siftDown(h []candidate, i int) {
	for {
		worst := i
		for _, child := range [2]int{2*i + 1, 2*i + 2} {
			if child < len(h) && ranksBefore(h[worst], h[child]) {
				worst = child
			}
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}
