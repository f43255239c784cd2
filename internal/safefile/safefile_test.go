//go:build unix

package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeInput(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestCheckOutputRefusesInputsAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	in := writeInput(t, dir, "model.gguf", "weights")
	hard := filepath.Join(dir, "hard.gguf")
	require.NoError(t, os.Link(in, hard))
	sym := filepath.Join(dir, "sym.gguf")
	require.NoError(t, os.Symlink(in, sym))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))

	for _, tc := range []struct{ name, out, want string }{
		{"same path", in, "it is the input file"},
		{"hard link", hard, "it is the input file"},
		{"symbolic link", sym, "it is the input file"},
		{"dot path", filepath.Join(dir, ".", "model.gguf"), "it is the input file"},
		{"directory", dir, "it is a directory"},
		{"fifo without a reader", fifo, "no program is reading"},
		{"missing folder", filepath.Join(dir, "nope", "x.plan"), "does not exist: create it first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteFile(tc.out, []byte("plan"), in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			b, err := os.ReadFile(in)
			require.NoError(t, err)
			assert.Equal(t, "weights", string(b), "the input must be untouched")
		})
	}
	assertNoTemps(t, dir)
}

func TestWriteFileReplacesAtomicallyAndKeepsLinks(t *testing.T) {
	dir := t.TempDir()
	target := writeInput(t, dir, "out.plan", "old")
	require.NoError(t, os.Chmod(target, 0o640))
	link := filepath.Join(dir, "link.plan")
	require.NoError(t, os.Symlink(target, link))

	require.NoError(t, WriteFile(link, []byte("new")))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link stays a link")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	st, err := os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "permissions are kept")
	assertNoTemps(t, dir)
}

func TestCharacterDeviceIsWrittenInPlace(t *testing.T) {
	require.NoError(t, WriteFile(os.DevNull, []byte("discarded")))
	st, err := os.Stat(os.DevNull)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeCharDevice, "/dev/null must still be a device")
}

func TestAbortLeavesTargetAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	target := writeInput(t, dir, "out.json", "old")
	p, err := Create(target)
	require.NoError(t, err)
	_, err = p.WriteString("half")
	require.NoError(t, err)
	p.Abort()
	b, _ := os.ReadFile(target)
	assert.Equal(t, "old", string(b))
	assertNoTemps(t, dir)
}

func TestRemoveTempsDeletesUncommitted(t *testing.T) {
	dir := t.TempDir()
	p, err := Create(filepath.Join(dir, "x"))
	require.NoError(t, err)
	RemoveTemps()
	_, err = os.Stat(p.Name())
	assert.True(t, os.IsNotExist(err))
	p.Abort()
}

func TestOpenRegularDoesNotBlockOnFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.gguf")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	done := make(chan error, 1)
	go func() {
		f, err := OpenRegular(fifo, "model")
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "named pipe (FIFO), not a regular file")
	case <-time.After(5 * time.Second):
		t.Fatal("OpenRegular blocked on a FIFO")
	}
	_, err := OpenRegular(filepath.Join(dir, "missing"), "model")
	assert.ErrorContains(t, err, "model "+filepath.Join(dir, "missing")+" does not exist")
	_, err = OpenRegular("/dev/zero", "model")
	assert.ErrorContains(t, err, "character device")
}

func TestReadLimited(t *testing.T) {
	dir := t.TempDir()
	small := writeInput(t, dir, "prompt.txt", "hello")
	b, err := ReadLimited(small, "prompt file", 16)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))

	_, err = ReadLimited(small, "prompt file", 3)
	assert.ErrorContains(t, err, "more than the 3 bytes limit")

	_, err = ReadLimited("/dev/zero", "prompt file", 1<<16)
	assert.ErrorContains(t, err, "does not end within 64.0 KiB")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	b, err = ReadLimited(fifo, "prompt file", 16) // no writer: empty, not a hang
	require.NoError(t, err)
	assert.Empty(t, b)

	_, err = ReadLimited(dir, "prompt file", 16)
	assert.ErrorContains(t, err, "is a directory")
}

func TestReserveReportsMissingSpace(t *testing.T) {
	dir := t.TempDir()
	f, err := TempBeside(filepath.Join(dir, "big.packed"))
	require.NoError(t, err)
	defer Discard(f.Name())
	defer f.Close()
	err = Reserve(f, 1<<62)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not enough disk space")
	require.NoError(t, Reserve(f, 1<<20))
	st, err := f.Stat()
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), st.Size())
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.Contains(e.Name(), ".tmp-"), "temporary file left behind: %s", e.Name())
	}
}
