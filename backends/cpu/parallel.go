package cpu

import "sync"

// parallelFor splits [0, n) into at most threads contiguous chunks of at
// least grain items and runs fn on each concurrently.
func parallelFor(n, threads, grain int, fn func(worker, lo, hi int)) {
	chunks := min(threads, (n+grain-1)/grain)
	if chunks <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	per := (n + chunks - 1) / chunks
	for w := 0; w < chunks; w++ {
		lo, hi := w*per, min(n, (w+1)*per)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w, lo, hi)
		}()
	}
	wg.Wait()
}
