//go:build linux

package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Class 2: a full disk while repacking is an error naming the space
// needed, not a SIGBUS, and leaves no file behind.
func TestCompileOnFullDisk(t *testing.T) {
	needsPacking(t)
	src := modelAt(t, t.TempDir(), "m.gguf", 1)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16k"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v): needs root in a namespace that allows mounts", err)
	}
	defer unix.Unmount(dir, 0)
	_, err := CompileTo(src, filepath.Join(dir, "m.plan"), CompileOptions{Ctx: 64})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not enough disk space")
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "nothing may be left on the full disk")
}

// Class 4: inputs that are not regular files are refused at once.
func TestSpecialFilesAsInputs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "m.gguf")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	fifoPlan := filepath.Join(dir, "m.plan")
	require.NoError(t, unix.Mkfifo(fifoPlan, 0o600))
	for _, tc := range []struct{ path, want string }{
		{fifo, "named pipe (FIFO), not a regular file"},
		{fifoPlan, "named pipe (FIFO), not a regular file"},
		{"/dev/zero", "character device, not a regular file"},
		{dir, "a directory, not a regular file"},
	} {
		_, err := Open(tc.path, Options{})
		require.Error(t, err, tc.path)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := ReadPlan("/dev/zero")
	assert.ErrorContains(t, err, "character device")
}
