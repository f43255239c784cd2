package serve

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/runtime/sample"
)

// slot is the scheduler's view of one Batcher sequence.
type slot struct {
	job      *job      // nil: free (its tokens stay as a cached prefix)
	lastUsed time.Time // least recently used free slots are overwritten first
}

// errShuttingDown answers requests the server will not run.
var errShuttingDown = &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Message: "the server is shutting down"}

// loop is the scheduler goroutine: it owns the Batcher and every job in a
// slot. It ends when Shutdown has drained the work (or aborted it).
func (s *Server) loop() {
	defer close(s.done)
	for {
		if !s.admit() {
			return
		}
		s.embedPending()
		if s.active() > 0 {
			s.step()
		}
	}
}

// active counts the slots running a job.
func (s *Server) active() int {
	n := 0
	for _, sl := range s.slots {
		if sl.job != nil {
			n++
		}
	}
	return n
}

// admit waits for work when there is none, then moves queued jobs into
// free slots. It returns false when the scheduler should end.
func (s *Server) admit() bool {
	select {
	case <-s.abort:
		s.abortAll()
		return false
	default:
	}
	if s.active() == 0 {
		select {
		case j := <-s.queue:
			s.place(j)
		case e := <-s.embeds:
			s.embed(e)
		case <-s.stopping:
			if len(s.queue) == 0 && len(s.embeds) == 0 {
				return false
			}
		case <-s.abort:
			s.abortAll()
			return false
		}
	}
	for s.active() < len(s.slots) {
		select {
		case j := <-s.queue:
			s.place(j)
		default:
			return true
		}
	}
	return true
}

// place puts j in a free slot with as much of its prompt's prefix as any
// slot holds (at least one prompt token is evaluated, for the logits of
// the first generated token).
func (s *Server) place(j *job) {
	s.metrics.queueDepth.Add(-1)
	if j.ctx.Err() != nil {
		s.metrics.cancelled.Add(1)
		return
	}
	dst, src, n := s.pickSlot(j.prompt)
	keep, err := s.reuse(dst, src, min(n, len(j.prompt)-1))
	if err != nil {
		j.out.put(event{Err: err})
		return
	}
	smp, err := sample.New(j.params, s.model.VocabSize())
	if err != nil { // validated by the handler; kept as an error, not a panic
		j.out.put(event{Err: badRequest("", "%v", err)})
		return
	}
	for _, id := range j.prompt {
		smp.Accept(id)
	}
	j.sampler, j.dec, j.slot, j.fed = smp, s.model.Tokenizer.NewStreamDecoder(), dst, keep
	s.slots[dst].job = j
	s.metrics.slotsBusy.Add(1)
	s.metrics.queue.observe(time.Since(j.queued))
	s.metrics.prefixLookups.Add(1)
	if keep > 0 {
		s.metrics.prefixHits.Add(1)
		s.metrics.prefixTokens.Add(uint64(keep))
	}
}

// pickSlot chooses the free slot dst for prompt and where its prefix
// comes from: dst's own cached tokens when no slot shares more of the
// prompt, else the slot src (busy or free) that shares the most, whose
// cells are copied into the least recently used free slot.
func (s *Server) pickSlot(prompt []int32) (dst, src, n int) {
	own, ownN, lru, far, farN := -1, -1, -1, -1, -1
	for i, sl := range s.slots {
		k := commonPrefix(s.batcher.History(i), prompt)
		if k > farN {
			far, farN = i, k
		}
		if sl.job != nil {
			continue
		}
		if k > ownN || k == ownN && sl.lastUsed.Before(s.slots[own].lastUsed) {
			own, ownN = i, k
		}
		if lru < 0 || sl.lastUsed.Before(s.slots[lru].lastUsed) {
			lru = i
		}
	}
	if farN > ownN && s.copyPrefix {
		return lru, far, farN
	}
	return own, own, ownN
}

// reuse makes slot dst hold the first n tokens of slot src and returns
// how many it holds: 0 when the backend cannot copy cells between slots
// (dst then starts empty, and no copy is tried again).
func (s *Server) reuse(dst, src, n int) (int, error) {
	if dst == src {
		return n, s.batcher.Truncate(dst, n)
	}
	if err := s.batcher.CopyPrefix(dst, src, n); err != nil {
		s.copyPrefix = false
		return 0, s.batcher.Truncate(dst, 0)
	}
	s.metrics.prefixCopies.Add(1)
	return n, nil
}

// release frees j's slot; its tokens stay there as a cached prefix.
func (s *Server) release(j *job) {
	s.slots[j.slot].job = nil
	s.slots[j.slot].lastUsed = time.Now()
	s.metrics.slotsBusy.Add(-1)
}

// finish ends j with a reason, sending its last event.
func (s *Server) finish(j *job, reason string) {
	if rest := j.dec.Flush(); rest != "" {
		if send, stopped := j.stopScan(rest); send != "" || stopped {
			j.out.put(event{Text: send})
		}
	}
	if j.held != "" && !j.stopHit { // kept back for a stop string that never came
		j.out.put(event{Text: j.held})
	}
	j.out.put(event{Done: true, Finish: reason, Usage: usage{
		PromptTokens: len(j.prompt), CompletionTokens: j.generated, TotalTokens: len(j.prompt) + j.generated}})
	s.release(j)
}

// fail ends j with an error.
func (s *Server) fail(j *job, err error) {
	j.out.put(event{Err: err})
	s.release(j)
}

// abortAll fails every job, queued or running (Shutdown's deadline).
func (s *Server) abortAll() {
	for _, sl := range s.slots {
		if sl.job != nil {
			s.fail(sl.job, errShuttingDown)
		}
	}
	for {
		select {
		case j := <-s.queue:
			s.metrics.queueDepth.Add(-1)
			j.out.put(event{Err: errShuttingDown})
		case e := <-s.embeds:
			e.done <- embedResult{err: errShuttingDown}
		default:
			return
		}
	}
}

// plan builds one step: a token from every decoding slot, then prompt
// chunks for prefilling slots in slot order, within MaxTokens. While
// anyone decodes, prefill takes at most PrefillChunk tokens a step so that
// a long prompt delays the others' next token by one chunk's time only.
func (s *Server) plan() []runtime.SeqInput {
	var in []runtime.SeqInput
	budget := s.batcher.MaxTokens()
	for i, sl := range s.slots {
		if j := sl.job; j != nil && j.decoding {
			in = append(in, runtime.SeqInput{Slot: i, Tokens: []int32{j.next}, Logits: true})
			budget--
		}
	}
	if len(in) > 0 {
		budget = min(budget, s.opts.PrefillChunk)
	}
	for i, sl := range s.slots {
		j := sl.job
		if j == nil || j.decoding || budget <= 0 {
			continue
		}
		n := min(len(j.prompt)-j.fed, budget)
		in = append(in, runtime.SeqInput{Slot: i, Tokens: j.prompt[j.fed : j.fed+n], Logits: j.fed+n == len(j.prompt)})
		budget -= n
	}
	return in
}

// dropGone frees the slots of jobs whose client went away.
func (s *Server) dropGone() {
	for _, sl := range s.slots {
		if j := sl.job; j != nil && j.ctx.Err() != nil {
			s.metrics.cancelled.Add(1)
			s.release(j)
		}
	}
}

// shiftFull shifts the context of every decoding slot whose next token
// would reach its last cell (llama-server's rule, n_past + 1 >= n_ctx),
// when the server shifts (Options.ContextShift). A slot that cannot shift
// ends its request with the reason.
func (s *Server) shiftFull() {
	if !s.opts.ContextShift {
		return
	}
	for _, sl := range s.slots {
		j := sl.job
		if j == nil || !j.decoding || len(s.batcher.History(j.slot))+1 < s.batcher.SlotContext() {
			continue
		}
		if _, err := s.batcher.Shift(j.slot, j.keep); err != nil {
			s.fail(j, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: fmt.Sprintf("the context is full and shifting it failed: %v", err)})
			continue
		}
		s.metrics.contextShifts.Add(1)
	}
}

// step runs one Batcher step and hands each sequence's logits to its job.
func (s *Server) step() {
	s.dropGone()
	s.shiftFull()
	in := s.plan()
	if len(in) == 0 {
		return
	}
	if s.stepHook != nil {
		s.stepHook(in)
	}
	logits, err := s.batcher.Step(s.runCtx, in)
	s.metrics.steps.Add(1)
	if err != nil {
		for _, x := range in {
			s.fail(s.slots[x.Slot].job, fmt.Errorf("evaluating: %w", err))
		}
		return
	}
	total := 0
	for i, x := range in {
		total += len(x.Tokens)
		j := s.slots[x.Slot].job
		if !j.decoding {
			j.fed += len(x.Tokens)
		}
		if logits[i] != nil {
			s.advance(j, logits[i])
		}
	}
	s.metrics.stepTokens.Add(uint64(total))
	s.updateKV()
}

// updateKV publishes the KV cells in use (every slot's history, cached
// prefixes included).
func (s *Server) updateKV() {
	n := 0
	for i := range s.slots {
		n += len(s.batcher.History(i))
	}
	s.metrics.kvUsed.Store(int64(n))
}

// advance samples j's next token from logits and decides whether j goes
// on.
func (s *Server) advance(j *job, logits []float32) {
	id := j.sampler.Sample(j.biased(logits))
	j.sampler.Accept(id)
	now := time.Now()
	if j.generated == 0 {
		s.metrics.ttft.observe(now.Sub(j.queued))
	} else {
		s.metrics.token.observe(now.Sub(j.lastToken))
	}
	j.lastToken = now
	tok := s.model.Tokenizer
	if !j.ignoreEOS && tok.IsEOG(id) {
		s.finish(j, "stop")
		return
	}
	j.generated++
	s.metrics.generatedTokens.Add(1)
	send, stopped := j.stopScan(j.dec.Add(id))
	if send != "" {
		j.out.put(event{Text: send})
	}
	switch {
	case stopped:
		s.finish(j, "stop")
	case j.generated >= j.maxTokens, !s.opts.ContextShift && len(s.batcher.History(j.slot)) >= s.batcher.SlotContext():
		s.finish(j, "length")
	default:
		j.next, j.decoding = id, true
	}
}

// biased returns logits with the request's logit_bias added (a copy: the
// Batcher's buffer is left alone).
func (j *job) biased(logits []float32) []float32 {
	if len(j.bias) == 0 {
		return logits
	}
	j.scratch = append(j.scratch[:0], logits...)
	for id, b := range j.bias {
		switch {
		case int(id) >= len(j.scratch):
		case b <= -100: // OpenAI: -100 bans the token
			j.scratch[id] = float32(math.Inf(-1))
		default:
			j.scratch[id] += b
		}
	}
	return j.scratch
}

// errNotEmbedding is returned by /v1/embeddings on a server started
// without embeddings.
var errNotEmbedding = &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error",
	Message: "this server was started without embeddings (graphrun serve --embeddings)"}
