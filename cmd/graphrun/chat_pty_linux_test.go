package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the controlling side, and the
// terminal a child reads and writes.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(ptm.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)) // unlockpt
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)                       // ptsname
	require.NoError(t, err)
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	return ptm, pts
}

// TestChatTerminal runs graphrun chat on a pseudo-terminal and types at
// it: Ctrl-C (the terminal's interrupt character, so the kernel sends
// SIGINT) stops the reply, and Ctrl-D (end of input) exits with status 0.
func TestChatTerminal(t *testing.T) {
	ptm, pts := openPTY(t)
	defer ptm.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$", "--", "chat", stories(t), "--ignore-eos", "-n", "1000000", "--ctx", "100000")
	cmd.Env = append(os.Environ(), processEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	pts.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	t.Cleanup(func() {
		if !exited {
			cmd.Process.Kill()
			<-done
		}
	})
	var mu sync.Mutex
	var screen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitScreen := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(startWithin)
		for {
			mu.Lock()
			s := screen.String()
			mu.Unlock()
			if ok(s) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s on the terminal within %v: %q", what, startWithin, tail(s))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitScreen("prompt", func(s string) bool { return strings.Contains(s, promptMain) })
	_, err := ptm.WriteString("Once upon a time\n")
	require.NoError(t, err)
	waitScreen("streamed reply", func(s string) bool { return len(s) > 1000 })
	_, err = ptm.WriteString("\x03") // Ctrl-C
	require.NoError(t, err)
	waitScreen("the reply stopped", func(s string) bool { return strings.Contains(s, "[stopped]") })
	waitScreen("the next prompt", func(s string) bool { return strings.Count(s, promptMain) >= 2 })
	_, err = ptm.WriteString("\x04") // Ctrl-D
	require.NoError(t, err)
	select {
	case err := <-done:
		exited = true
		require.NoError(t, err)
		assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	case <-time.After(startWithin):
		t.Fatal("Ctrl-D did not exit")
	}
}
