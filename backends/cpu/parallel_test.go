package cpu

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParallelForCoversEachIndexOnce runs many overlapping calls, as
// concurrent sessions do, and checks every index runs exactly once.
func TestParallelForCoversEachIndexOnce(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range []int{1, 2, 7, 64, 1000} {
				hits := make([]atomic.Int32, n)
				parallelFor(n, 4, 3, funcJob(func(w, lo, hi int) {
					if w < 0 || w >= 4 {
						t.Errorf("worker index %d", w)
					}
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
				}))
				for i := range hits {
					if hits[i].Load() != 1 {
						t.Errorf("n=%d: index %d ran %d times", n, i, hits[i].Load())
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestParallelTilesCoversEachIndexOnce checks parallelTiles's chunks cover
// every index once and that worker indices name threads (< threads), not
// chunks, since jobs index per-thread scratch with them.
func TestParallelTilesCoversEachIndexOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		for _, n := range []int{1, 2, 5, 64, 1000} {
			hits := make([]atomic.Int32, n)
			parallelTiles(n, threads, funcJob(func(w, lo, hi int) {
				if w < 0 || w >= threads {
					t.Errorf("threads=%d n=%d: worker index %d", threads, n, w)
				}
				for i := lo; i < hi; i++ {
					hits[i].Add(1)
				}
			}))
			for i := range hits {
				if hits[i].Load() != 1 {
					t.Errorf("threads=%d n=%d: index %d ran %d times", threads, n, i, hits[i].Load())
				}
			}
		}
	}
}

// WEFT_CPU_SPIN sets the idle workers' polls; anything but a count keeps
// the default.
func TestSpinPollsFrom(t *testing.T) {
	for v, want := range map[string]int{"": defaultSpinPolls, "0": 0, "500": 500, "-1": defaultSpinPolls, "many": defaultSpinPolls} {
		assert.Equal(t, want, spinPollsFrom(v), "WEFT_CPU_SPIN=%q", v)
	}
}
