package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// processEnv makes the test binary run graphrun's main with the arguments
// after "--" (see TestMainProcess): the signal tests start it as a child.
const processEnv = "WEFT_GRAPHRUN_PROCESS"

// TestMainProcess is graphrun itself when the signal tests start this test
// binary as a child process; in a normal test run it does nothing.
func TestMainProcess(t *testing.T) {
	if os.Getenv(processEnv) != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Args = append([]string{"graphrun"}, args...)
	main() // exits
}

func TestWatchSignals(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	var stderr bytes.Buffer
	go watchSignals(sigs, cancel, func(code int) { exited <- code }, &stderr)

	sigs <- syscall.SIGINT
	<-ctx.Done()
	var se *signalError
	require.ErrorAs(t, context.Cause(ctx), &se, "the first signal cancels the run")
	assert.Equal(t, 130, se.status())
	select {
	case code := <-exited:
		t.Fatalf("exited with %d on the first signal", code)
	case <-time.After(50 * time.Millisecond):
	}

	sigs <- syscall.SIGTERM
	select {
	case code := <-exited:
		assert.Equal(t, 143, code, "the second signal exits at once")
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not exit")
	}
	assert.Contains(t, stderr.String(), "exiting at once")
}

func TestExitStatus(t *testing.T) {
	byInt, cancelInt := context.WithCancelCause(context.Background())
	cancelInt(&signalError{syscall.SIGINT})
	byTerm, cancelTerm := context.WithCancelCause(context.Background())
	cancelTerm(&signalError{syscall.SIGTERM})
	plain, cancelPlain := context.WithCancel(context.Background())
	defer cancelPlain()
	cases := []struct {
		ctx    context.Context
		err    error
		status int
		print  string // on stderr ("" nothing)
	}{
		{plain, nil, 0, ""},
		{plain, errUsage, 2, ""},
		{plain, errors.New("boom"), 1, "graphrun: boom\n"},
		{byInt, nil, 130, ""},
		{byTerm, nil, 143, ""},
		{byInt, fmt.Errorf("prefill: %w", context.Canceled), 130, ""},
		{byTerm, errors.New("context full"), 143, "graphrun: context full\n"},
	}
	for i, c := range cases {
		var stderr bytes.Buffer
		assert.Equal(t, c.status, exitStatus(c.ctx, c.err, &stderr), "case %d", i)
		assert.Equal(t, c.print, stderr.String(), "case %d", i)
	}
}

// TestCancelledRunStillReports: a run whose context is already cancelled
// (a signal during loading) still prints the JSON object and the summary.
func TestCancelledRunStillReports(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalError{syscall.SIGTERM})
	var out, errOut bytes.Buffer
	require.NoError(t, run(ctx, []string{stories(t), "--prompt", "Once upon a time", "-n", "8", "--json"}, &out, &errOut))
	var res struct {
		Tokens     []int32 `json:"tokens"`
		StopReason string  `json:"stop_reason"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.Equal(t, "cancelled", res.StopReason)
	assert.NotNil(t, res.Tokens, `"tokens" is [], not null`)
	assert.Empty(t, res.Tokens)
	assert.True(t, strings.Contains(errOut.String(), "stop: cancelled"), errOut.String())
}
