package runtime

import (
	"sync/atomic"
	"testing"
)

// TestStreamChunksReadsEveryLineOnce checks the bandwidth probe really
// reads each cache line once, whatever the thread count: the sum of one
// word per line is known.
func TestStreamChunksReadsEveryLineOnce(t *testing.T) {
	buf := make([]byte, 3<<20+640) // not a whole number of chunks
	var want uint64
	for i := 0; i < len(buf); i += 64 {
		buf[i] = byte(i / 64)
		want += uint64(byte(i / 64))
	}
	for _, threads := range []int{1, 2, 5} {
		sink = atomic.Uint64{}
		streamChunks(buf, threads)
		if got := sink.Load(); got != want {
			t.Fatalf("threads=%d: sum %d, want %d", threads, got, want)
		}
	}
}

// TestReadBandwidthTimesAtLeastOneRun checks that reps below one still
// give a summary (graphrun bench -r 0 --bandwidth panicked once).
func TestReadBandwidthTimesAtLeastOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 512 MiB twice")
	}
	s, err := ReadBandwidth(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Runs) != 1 || !(s.Median > 0) {
		t.Fatalf("summary %+v", s)
	}
}
