package runtime

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-ml/weft/internal/hugepage"
)

// bandwidthBytes is the buffer ReadBandwidth streams: far beyond any
// cache, small enough to allocate beside a loaded model.
const bandwidthBytes = 512 << 20

// ReadBandwidth measures how fast threads goroutines together stream a
// buffer from memory (GB/s, max(reps, 1) runs after a warm-up), touching one word
// per cache line, with the buffer on huge pages and dealt out in chunks
// claimed in order as the matmul tiles are. It is the ceiling decode can
// reach on this machine at this moment: on a shared host it drifts, so
// measure it beside the runs it explains.
func ReadBandwidth(threads, reps int) (*Stat, error) {
	reps = max(reps, 1) // as Bench: at least one timed run
	buf, free, err := hugepage.Alloc(bandwidthBytes)
	if err != nil {
		return nil, err
	}
	defer free()
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12) // fault every page in before timing
	}
	runs := make([]float64, 0, reps)
	for r := 0; r <= reps; r++ {
		start := time.Now()
		streamChunks(buf, max(threads, 1))
		if r > 0 { // run 0 warms up
			runs = append(runs, float64(len(buf))/time.Since(start).Seconds()/1e9)
		}
	}
	return SummarizeRuns(runs), nil
}

// sink keeps the reads of streamChunks observable.
var sink atomic.Uint64

// streamChunks reads one word of every cache line of buf on threads
// goroutines that claim 1 MiB chunks in order.
func streamChunks(buf []byte, threads int) {
	const chunk = 1 << 20
	var next atomic.Int64
	var wg sync.WaitGroup
	for range threads {
		wg.Go(func() {
			var s uint64
			for {
				lo := int(next.Add(chunk) - chunk)
				if lo >= len(buf) {
					break
				}
				c := buf[lo:min(lo+chunk, len(buf))]
				for i := 0; i+64 <= len(c); i += 64 {
					s += binary.LittleEndian.Uint64(c[i:])
				}
			}
			sink.Add(s)
		})
	}
	wg.Wait()
}
