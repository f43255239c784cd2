package serve

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/weft-ml/weft/model/tokenizer"
	"github.com/weft-ml/weft/runtime/sample"
)

// event is what the scheduler tells a request's handler: text to send,
// or the end (Done) with its reason and usage, or a failure.
type event struct {
	Text   string
	Done   bool
	Finish string // "stop" or "length" when Done
	Usage  usage
	Err    error
}

// outbox carries a job's events from the scheduler to its handler. The
// scheduler never waits on it: a slow client must not stall everyone's
// step, so events pile up in a slice and a one-element channel says that
// there are some.
type outbox struct {
	mu     sync.Mutex
	events []event
	notify chan struct{}
}

func newOutbox() *outbox { return &outbox{notify: make(chan struct{}, 1)} }

func (o *outbox) put(e event) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// take returns the events so far (after a receive from notify).
func (o *outbox) take() []event {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev := o.events
	o.events = nil
	return ev
}

// job is one generation request. The fields after the first block belong
// to the scheduler goroutine.
type job struct {
	ctx       context.Context
	prompt    []int32
	maxTokens int
	params    sample.Params
	bias      map[int32]float32
	stops     []string
	ignoreEOS bool
	keep      int // tokens a context shift keeps (runtime.KeepTokens)
	queued    time.Time
	out       *outbox

	slot      int
	fed       int   // prompt tokens in the slot's cache (reused prefix included)
	next      int32 // the sampled token to feed in the next step (decoding)
	decoding  bool
	generated int
	sampler   *sample.Sampler
	dec       *tokenizer.StreamDecoder
	held      string // text kept back because it may begin a stop string
	stopHit   bool   // a stop string ended the text
	scratch   []float32
	lastToken time.Time
}

// stopScan appends piece to the text held back and returns what can be
// sent now, and whether a stop string ended the text (what precedes it
// is sent, the rest dropped). Text that could be the start of a stop
// string stays held until the next piece decides.
func (j *job) stopScan(piece string) (send string, stopped bool) {
	if len(j.stops) == 0 {
		return piece, false
	}
	t := j.held + piece
	cut := -1
	for _, s := range j.stops {
		if i := strings.Index(t, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		j.held, j.stopHit = "", true
		return t[:cut], true
	}
	keep := 0
	for _, s := range j.stops {
		keep = max(keep, partialSuffix(t, s))
	}
	j.held = t[len(t)-keep:]
	return t[:len(t)-keep], false
}

// partialSuffix is the length of the longest suffix of t that is a proper
// prefix of s.
func partialSuffix(t, s string) int {
	for n := min(len(t), len(s)-1); n > 0; n-- {
		if strings.HasPrefix(s, t[len(t)-n:]) {
			return n
		}
	}
	return 0
}

// commonPrefix is the number of leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
