package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/weft-ml/weft/chat"
	"github.com/weft-ml/weft/runtime"
)

// errStopString ends a reply at one of the stop strings.
var errStopString = errors.New("stop string")

// reply answers the last user message: it renders the whole conversation,
// keeps the KV cache of the prefix the session already holds, evaluates
// the rest and streams the reply. Ctrl-C stops the reply only; a user
// message that could not be answered at all is taken back.
func (r *repl) reply(ctx context.Context) {
	ids, err := r.promptTokens()
	if err != nil {
		r.msgs = r.msgs[:len(r.msgs)-1]
		fmt.Fprintf(r.errOut, "%v\n", err)
		return
	}
	replyCtx, cancel := context.WithCancel(ctx)
	watched, unwatched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(unwatched)
		r.watchReply(cancel, watched)
	}()
	filter := newStopFilter(append(r.tmpl.Stops(), r.params.Stops...), func(s string) { io.WriteString(r.out, s) })
	opts := runtime.GenerateOptions{MaxTokens: r.params.MaxTokens, Sampling: r.params.Sampling, IgnoreEOS: r.ignoreEOS}
	opts.Sampling.Seed += uint64(r.turns)
	r.turns++
	res, err := r.s.GenerateTokens(replyCtx, ids, opts, func(_ int32, text string) error { return filter.add(text) })
	close(watched)
	<-unwatched // r.exit is settled
	cancel()
	filter.flush()
	r.finish(res, err, filter.text.String())
}

// promptTokens renders and tokenizes the conversation and truncates the
// session to the longest prefix it shares with it, returning the tokens
// still to evaluate.
func (r *repl) promptTokens() ([]int32, error) {
	text, err := r.tmpl.Render(r.msgs, true)
	if err != nil {
		return nil, err
	}
	// The template wrote the turn markers as text: parse them as the
	// special tokens they are. BOS comes from the tokenizer (Render cut it).
	ids, err := r.m.Tokenizer.Encode(text, true, true)
	if err != nil {
		return nil, fmt.Errorf("tokenizing the conversation: %w", err)
	}
	if len(ids)+1 >= r.s.Context() {
		return nil, fmt.Errorf("context full: the conversation is %d tokens, the context %d; /clear starts a new one (or restart with a larger --ctx)", len(ids), r.s.Context())
	}
	hist := r.s.History()
	keep := 0
	for keep < len(hist) && keep < len(ids) && hist[keep] == ids[keep] {
		keep++
	}
	if keep == len(ids) {
		keep-- // the last token is evaluated again for its logits
	}
	if err := r.s.Truncate(keep); err != nil {
		return nil, err
	}
	r.reused = keep
	return ids[keep:], nil
}

// watchReply cancels the reply at Ctrl-C (and at SIGTERM, which then ends
// the program) until watched closes.
func (r *repl) watchReply(cancel context.CancelFunc, watched <-chan struct{}) {
	select {
	case sig := <-r.sigs:
		if sig == syscall.SIGTERM {
			r.exit = &signalError{sig}
		}
		cancel()
	case <-watched:
	}
}

// finish records the reply (what was shown, even if stopped early) and
// says why it ended when that is not the end of the turn.
func (r *repl) finish(res *runtime.Result, err error, text string) {
	fmt.Fprintln(r.out)
	switch {
	case res == nil:
		r.msgs = r.msgs[:len(r.msgs)-1]
		fmt.Fprintf(r.errOut, "%v\n", err)
		return
	case res.PrefillCancelled:
		r.msgs = r.msgs[:len(r.msgs)-1]
		fmt.Fprintln(r.errOut, "[cancelled before the reply began]")
		return
	}
	r.msgs = append(r.msgs, assistant(text))
	if r.verbose {
		fmt.Fprintf(r.errOut, "[prompt: %d tokens reused from the KV cache, %d evaluated at %.1f tok/s; reply: %d tokens at %.1f tok/s]\n",
			r.reused, len(res.PromptTokens), res.PrefillTokensPerSecond(), len(res.Tokens), res.DecodeTokensPerSecond())
	}
	switch {
	case errors.Is(err, runtime.ErrContextFull):
		fmt.Fprintln(r.errOut, "[context full: the reply was cut; /clear starts a new conversation]")
	case err != nil && !errors.Is(err, errStopString):
		fmt.Fprintf(r.errOut, "[stopped: %v]\n", err)
	case res.StopReason == "cancelled":
		fmt.Fprintln(r.errOut, "[stopped]")
	case res.StopReason == "length":
		fmt.Fprintf(r.errOut, "[reply cut at %d tokens: /set num_predict changes it]\n", len(res.Tokens))
	}
}

func assistant(text string) chat.Message { return chat.Message{Role: "assistant", Content: text} }

// stopFilter streams a reply up to the first stop string, holding back
// text that could be the start of one so that no part of it is shown.
type stopFilter struct {
	stops   []string
	pending string
	hit     bool
	emit    func(string)
	text    strings.Builder // what was emitted
}

func newStopFilter(stops []string, emit func(string)) *stopFilter {
	var keep []string
	for _, s := range stops {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return &stopFilter{stops: keep, emit: emit}
}

// add takes the next piece of the reply; it returns errStopString once a
// stop string is complete.
func (f *stopFilter) add(piece string) error {
	if f.hit {
		return errStopString
	}
	f.pending += piece
	first := -1
	for _, s := range f.stops {
		if i := strings.Index(f.pending, s); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		f.out(f.pending[:first])
		f.pending, f.hit = "", true
		return errStopString
	}
	held := 0
	for _, s := range f.stops {
		for k := min(len(s)-1, len(f.pending)); k > held; k-- {
			if strings.HasSuffix(f.pending, s[:k]) {
				held = k
				break
			}
		}
	}
	f.out(f.pending[:len(f.pending)-held])
	f.pending = f.pending[len(f.pending)-held:]
	return nil
}

// flush shows what was held back when the reply ends without a stop.
func (f *stopFilter) flush() {
	if !f.hit {
		f.out(f.pending)
	}
	f.pending = ""
}

func (f *stopFilter) out(s string) {
	if s != "" {
		f.text.WriteString(s)
		f.emit(s)
	}
}
