//go:build unix

package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChatProcessSIGINT runs graphrun chat as a process fed through a pipe:
// a real SIGINT during a reply stops that reply only, the process reads
// on, and the end of its input (Ctrl-D) exits with status 0.
func TestChatProcessSIGINT(t *testing.T) {
	c := &child{done: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestMainProcess$", "--", "chat", stories(t), "--ignore-eos", "-n", "1000000", "--ctx", "100000")
	c.cmd.Env = append(os.Environ(), processEnv+"=1")
	c.cmd.Stdout, c.cmd.Stderr = lockedWriter{&c.mu, &c.stdout}, lockedWriter{&c.mu, &c.stderr}
	stdin, err := c.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if !c.exited {
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	c.waitFor(t, "the prompt", func(out, _ string) bool { return strings.Contains(out, promptMain) })
	_, err = io.WriteString(stdin, "Once upon a time\n")
	require.NoError(t, err)
	c.waitFor(t, "streamed text", func(out, _ string) bool { return len(out) > 300 })
	start := time.Now()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGINT))
	c.waitFor(t, "the reply to stop", func(_, errOut string) bool { return strings.Contains(errOut, "[stopped]") })
	assert.Less(t, time.Since(start), stopWithin)
	c.waitFor(t, "the next prompt", func(out, _ string) bool { return strings.Count(out, promptMain) == 2 })
	_, err = io.WriteString(stdin, "/show\n")
	require.NoError(t, err)
	c.waitFor(t, "/show", func(out, _ string) bool { return strings.Contains(out, "Conversation: 2 messages") })
	require.NoError(t, stdin.Close())
	select {
	case err := <-c.done:
		c.exited = true
		require.NoError(t, err)
		assert.Equal(t, 0, c.cmd.ProcessState.ExitCode())
	case <-time.After(startWithin):
		t.Fatal("no exit at the end of the input")
	}
	_, errOut := c.output()
	assert.NotContains(t, errOut, "graphrun:", "no error")
}
