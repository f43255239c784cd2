package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/weft-ml/weft/runtime"
)

// Exit statuses: 0 when the run finished, 1 on an error, 2 on a usage
// error, and 128+N when signal N stopped it: 130 for SIGINT (Ctrl-C) and
// 143 for SIGTERM, as shells report a process killed by the signal. A
// stopped run first ends cleanly between two batches or tokens and prints
// its summary (and its --json object, stop_reason "cancelled"); a second
// signal exits at once.
func main() {
	if len(os.Args) > 1 && os.Args[1] == "chat" { // Ctrl-C stops a reply, not the program
		os.Exit(chatMain(os.Args[2:]))
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go watchSignals(sigs, cancel, os.Exit, os.Stderr)
	var err error
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		err = runBench(ctx, os.Args[2:], os.Stdout, os.Stderr)
	} else if len(os.Args) > 1 && os.Args[1] == "serve" {
		err = runServe(ctx, os.Args[2:], os.Stdout, os.Stderr)
	} else if len(os.Args) > 1 && os.Args[1] == "bench-serve" {
		err = runBenchServe(ctx, os.Args[2:], os.Stdout, os.Stderr)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	os.Exit(exitStatus(ctx, err, os.Stderr))
}

// signalError is the cancellation cause of a run stopped by a signal.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return fmt.Sprintf("stopped by signal %v", e.sig) }

// status is the conventional exit status of a process ended by the signal.
func (e *signalError) status() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// watchSignals cancels the run with the first signal, so it stops between
// batches and reports what it did, and exits at once on the second.
func watchSignals(sigs <-chan os.Signal, cancel context.CancelCauseFunc, exit func(int), stderr io.Writer) {
	first := &signalError{<-sigs}
	cancel(first)
	second := &signalError{<-sigs}
	fmt.Fprintf(stderr, "\ngraphrun: %v again: exiting at once\n", second.sig)
	exit(second.status())
}

// exitStatus reports err on stderr and returns the process's exit status
// (see main).
func exitStatus(ctx context.Context, err error, stderr io.Writer) int {
	var sig *signalError
	stopped := errors.As(context.Cause(ctx), &sig)
	if err != nil && !errors.Is(err, errUsage) && !(stopped && errors.Is(err, context.Canceled)) {
		fmt.Fprintf(stderr, "graphrun: %v\n", err)
	}
	switch {
	case stopped:
		return sig.status()
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}

// errLoadCancelled: the run was stopped while the model was loading.
var errLoadCancelled = errors.New("stopped while loading the model")

// openModel opens the model, giving up when ctx is done: loading is not
// interruptible (compiling a GGUF in memory takes seconds on a big model),
// so it goes on in the background and is closed when it ends, which the
// exiting process does not wait for.
func openModel(ctx context.Context, path string, o runtime.Options) (*runtime.Model, error) {
	type opened struct {
		m   *runtime.Model
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		m, err := runtime.Open(path, o)
		ch <- opened{m, err}
	}()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.m != nil {
				r.m.Close()
			}
		}()
		return nil, errLoadCancelled
	}
}
