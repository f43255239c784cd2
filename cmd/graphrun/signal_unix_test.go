//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The signal tests run graphrun as a child process (this test binary, see
// TestMainProcess), signal it once it is busy and require that it stops
// within stopWithin, reports what it did and exits 128+signal. The limits
// are generous for a slow, loaded 2-core CI machine: a run that ignores
// the signal goes on for minutes.
const (
	startWithin = 60 * time.Second // model load and first output
	stopWithin  = 5 * time.Second
)

// child is a running graphrun with its output collected.
type child struct {
	cmd            *exec.Cmd
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	done           chan error // Wait's result
	exited         bool       // done has been received from
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{done: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], append([]string{"-test.run=^TestMainProcess$", "--"}, args...)...)
	c.cmd.Env = append(os.Environ(), processEnv+"=1")
	c.cmd.Stdout, c.cmd.Stderr = lockedWriter{&c.mu, &c.stdout}, lockedWriter{&c.mu, &c.stderr}
	require.NoError(t, c.cmd.Start())
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if !c.exited {
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// output returns what the child has written so far.
func (c *child) output() (stdout, stderr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stdout.String(), c.stderr.String()
}

// waitFor polls until ready reports true on the output so far, failing if
// the child exits first or startWithin passes.
func (c *child) waitFor(t *testing.T, what string, ready func(stdout, stderr string) bool) {
	t.Helper()
	deadline := time.Now().Add(startWithin)
	for !ready(c.output()) {
		select {
		case err := <-c.done:
			c.exited = true
			out, errOut := c.output()
			t.Fatalf("graphrun exited (%v) before %s; stdout %q, stderr %q", err, what, tail(out), tail(errOut))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, startWithin)
		}
	}
}

// signal sends sig and waits for the exit, returning the exit status and
// how long the child took to stop.
func (c *child) signal(t *testing.T, sig syscall.Signal) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	require.NoError(t, c.cmd.Process.Signal(sig))
	select {
	case <-c.done:
		c.exited = true
	case <-time.After(6 * stopWithin):
		out, errOut := c.output()
		t.Fatalf("still running %v after %v; stdout %q, stderr %q", 6*stopWithin, sig, tail(out), tail(errOut))
	}
	took := time.Since(start)
	t.Logf("stopped %v after %v", took, sig)
	return c.cmd.ProcessState.ExitCode(), took
}

func tail(s string) string { return s[max(0, len(s)-400):] }

// TestSIGINTDuringGeneration: Ctrl-C while tokens stream ends the run
// between two tokens with the text so far, a newline and the summary, and
// exit status 130.
func TestSIGINTDuringGeneration(t *testing.T) {
	c := startChild(t, stories(t), "--prompt", "Once upon a time", "--ignore-eos", "-n", "1000000", "--ctx", "200000", "--seed", "1")
	c.waitFor(t, "streamed text", func(out, _ string) bool { return len(out) > 200 })
	status, took := c.signal(t, syscall.SIGINT)
	out, errOut := c.output()
	assert.Equal(t, 130, status)
	assert.Less(t, took, stopWithin)
	assert.True(t, strings.HasSuffix(out, "\n"), "the text ends with a newline")
	assert.Contains(t, errOut, "stop: cancelled")
	assert.Regexp(t, `generated [1-9][0-9]* tokens`, errOut)
	assert.NotContains(t, errOut, "graphrun:", "no error message")
}

// TestSIGTERMDuringPrefill: SIGTERM during a long prompt stops between two
// chunks of it; with --json the object still comes, stop_reason
// "cancelled", and the exit status is 143.
func TestSIGTERMDuringPrefill(t *testing.T) {
	// About 24,000 tokens: minutes of prefill on a slow machine, many
	// seconds on a fast one.
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	require.NoError(t, os.WriteFile(prompt, []byte(strings.Repeat("Once upon a time there was a little girl named Lily. She loved to play outside in the park. ", 800)), 0o644))
	c := startChild(t, stories(t), "--file", prompt, "--ctx", "32768", "-n", "100000", "--ignore-eos", "--json")
	// Nothing is printed before the end: give it time to load and start.
	time.Sleep(1500 * time.Millisecond)
	status, took := c.signal(t, syscall.SIGTERM)
	out, errOut := c.output()
	assert.Equal(t, 143, status)
	assert.Less(t, took, stopWithin)
	var res struct {
		PromptTokens []int32 `json:"prompt_tokens"`
		Tokens       []int32 `json:"tokens"`
		StopReason   string  `json:"stop_reason"`
		PrefillMS    float64 `json:"prefill_ms"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), "stdout %q", tail(out))
	assert.Equal(t, "cancelled", res.StopReason)
	assert.Empty(t, res.Tokens, "the signal came during the prompt")
	t.Logf("%d prompt tokens, prefill cancelled after %.0f ms", len(res.PromptTokens), res.PrefillMS)
	assert.Contains(t, errOut, "stop: cancelled")
}

// TestSIGINTDuringBench: graphrun bench stops between decoded tokens and
// prints the runs completed before the signal.
func TestSIGINTDuringBench(t *testing.T) {
	c := startChild(t, "bench", stories(t), "-p", "0", "-n", "300", "-r", "1000000")
	c.waitFor(t, "two timed runs", func(_, errOut string) bool { return strings.Contains(errOut, "decode: run 3/") })
	status, took := c.signal(t, syscall.SIGINT)
	out, errOut := c.output()
	assert.Equal(t, 130, status)
	assert.Less(t, took, stopWithin)
	assert.Contains(t, out, "tg300")
	assert.Contains(t, out, "cancelled: the statistics cover the runs completed before the signal")
	assert.NotContains(t, errOut, "graphrun:", "no error message")
}
