package cpu

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
)

// job is work parallelFor can split: run handles items [lo, hi) as
// worker (a chunk index below the thread count, for per-thread scratch).
// Kernels keep their jobs in the State, so handing one over allocates
// nothing (a closure would escape to the workers and be allocated).
type job interface{ run(worker, lo, hi int) }

// funcJob adapts a function, for code off the per-token path.
type funcJob func(worker, lo, hi int)

func (f funcJob) run(worker, lo, hi int) { f(worker, lo, hi) }

// parallelFor splits [0, n) into at most threads contiguous chunks of at
// least grain items and runs j on each. The caller works too; the other
// chunks go to a persistent pool of workers, so no goroutine is started per
// call. Chunks are claimed with an atomic counter, so a busy pool only
// means the caller does more of the work itself. worker is the chunk index
// (< threads), so a job may index per-thread scratch with it.
func parallelFor(n, threads, grain int, j job) {
	split(n, threads, min(threads, (n+grain-1)/grain), false, j)
}

// parallelTiles is parallelFor for long runs of similar items (matmul
// tiles): every tile is its own chunk, claimed in order, and worker is the
// running thread's index (< threads), not the chunk's. Single tiles keep
// both threads streaming neighbouring weights until the last tile and let
// a thread that started late take less: F16 decode (TinyLlama, 2 threads)
// went 9.0 -> 10.9 tok/s against four chunks a thread (medians of three
// alternating rounds), the quantized types +2-4% (decisions.md, "Matmul
// tiles one at a time").
func parallelTiles(n, threads int, j job) {
	split(n, threads, n, true, j)
}

func split(n, threads, chunks int, bySlot bool, j job) {
	if chunks <= 1 || threads <= 1 {
		j.run(0, 0, n)
		return
	}
	t := tasks.Get().(*task)
	t.j, t.n, t.per, t.chunks, t.bySlot = j, n, (n+chunks-1)/chunks, int32(chunks), bySlot
	t.next.Store(0)
	t.slots.Store(0)
	helpers := min(chunks-1, workers.size, threads-1)
	t.pending.Store(int32(helpers))
	for i := 0; i < helpers; i++ {
		workers.queue <- t
	}
	t.runGuarded()
	// Wait until every queued message has been taken and its chunks are
	// done, even when this goroutine's share panicked: the workers must be
	// off the job before the caller sees the panic. The wait is short
	// (the other chunks are running), so spin.
	for t.pending.Load() > 0 {
		runtime.Gosched()
	}
	f := t.failed.Swap(nil)
	t.j = nil
	tasks.Put(t)
	if f != nil {
		panic(f) // on the caller's goroutine, where State.Run recovers it
	}
}

// task is one parallelFor call shared by the caller and the workers.
type task struct {
	j       job
	n, per  int
	chunks  int32
	bySlot  bool // pass the thread's slot, not the chunk, as worker
	next    atomic.Int32
	slots   atomic.Int32 // threads that joined so far
	pending atomic.Int32 // queued messages not yet finished
	failed  atomic.Pointer[failure]
}

// runGuarded is run that records a panic (a memory fault, see fault.go)
// in t.failed instead of unwinding: the first one wins.
func (t *task) runGuarded() {
	defer func() {
		if r := recover(); r != nil {
			t.failed.CompareAndSwap(nil, &failure{value: r, stack: debug.Stack()})
		}
	}()
	t.run()
}

// run claims and runs chunks until none are left.
func (t *task) run() {
	slot := int(t.slots.Add(1) - 1)
	for {
		c := t.next.Add(1) - 1
		if c >= t.chunks {
			return
		}
		lo, hi := int(c)*t.per, min(t.n, (int(c)+1)*t.per)
		w := int(c)
		if t.bySlot {
			w = slot
		}
		if lo < hi {
			t.j.run(w, lo, hi)
		}
	}
}

var tasks = sync.Pool{New: func() any { return new(task) }}

// workers is the process-wide pool, one goroutine per core but one (the
// caller is the remaining thread).
var workers = newPool(runtime.GOMAXPROCS(0) - 1)

type pool struct {
	size  int
	queue chan *task
}

func newPool(size int) *pool {
	p := &pool{size: max(size, 0), queue: make(chan *task, 64)}
	for i := 0; i < p.size; i++ {
		go p.work()
	}
	return p
}

// spinPolls is how many times an idle worker polls the queue before it
// blocks. Decode issues a parallel call every few hundred microseconds;
// a worker that slept would need a futex wake-up for each, which costs
// more than the work of a small matmul tile. WEFT_CPU_SPIN sets it (0:
// block at once), for machines where the cores are shared with other
// busy processes (docs/decisions.md has the measurements).
var spinPolls = spinPollsFrom(os.Getenv("WEFT_CPU_SPIN"))

// defaultSpinPolls is spinPolls without WEFT_CPU_SPIN.
const defaultSpinPolls = 2000

// spinPollsFrom reads WEFT_CPU_SPIN: a count of polls, or the default
// when empty or not a count (a bad value must not stop inference).
func spinPollsFrom(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return defaultSpinPolls
	}
	return n
}

// work serves the queue for the life of the process. Faults on its
// goroutine panic (once set, the flag stays with the goroutine), and
// runGuarded recovers them, so a fault in a worker's chunk is reported
// by the caller and the worker goes on serving.
func (p *pool) work() {
	debug.SetPanicOnFault(true)
	for {
		t := p.poll()
		if t == nil {
			t = <-p.queue
		}
		t.runGuarded()
		t.pending.Add(-1)
	}
}

func (p *pool) poll() *task {
	for i := 0; i < spinPolls; i++ {
		select {
		case t := <-p.queue:
			return t
		default:
			runtime.Gosched()
		}
	}
	return nil
}
