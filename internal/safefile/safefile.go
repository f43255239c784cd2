package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// OpenRegular opens path for reading and fails unless it is a regular file.
// The open does not block on a FIFO (O_NONBLOCK on Unix), so naming a pipe
// or a device gets an error at once rather than a hang.
func OpenRegular(path, what string) (*os.File, error) {
	fh, err := openNonBlocking(path)
	if err != nil {
		return nil, describeOpenError(err, path, what)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, fmt.Errorf("%s %s is %s, not a regular file: give the path of a %s file", what, path, describeMode(st.Mode()), what)
	}
	if err := setBlocking(fh); err != nil {
		fh.Close()
		return nil, err
	}
	return fh, nil
}

// ReadLimited reads a whole input that may be a regular file or a stream
// (a pipe, /dev/stdin), failing once it exceeds limit bytes. A FIFO that no
// program writes to reads as empty instead of blocking.
func ReadLimited(path, what string, limit int64) ([]byte, error) {
	fh, err := openNonBlocking(path)
	if err != nil {
		return nil, describeOpenError(err, path, what)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s %s is a directory: give a file", what, path)
	}
	if st.Mode().IsRegular() && st.Size() > limit {
		return nil, fmt.Errorf("%s %s is %s, more than the %s limit", what, path, Bytes(st.Size()), Bytes(limit))
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s %s does not end within %s (a device or an endless stream?): give a regular file", what, path, Bytes(limit))
	}
	return data, nil
}

func describeOpenError(err error, path, what string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s does not exist", what, path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s %s cannot be read (permission denied)", what, path)
	}
	return fmt.Errorf("opening %s %s: %w", what, path, err)
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// Bytes formats a size for messages.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// temps are the temporary files not yet committed or removed.
var temps sync.Map // path -> struct{}

func track(path string)   { temps.Store(path, struct{}{}) }
func untrack(path string) { temps.Delete(path) }

// RemoveTemps removes every temporary file this process created and has
// not yet committed; tools call it when a signal interrupts them.
func RemoveTemps() {
	temps.Range(func(k, _ any) bool {
		os.Remove(k.(string))
		temps.Delete(k)
		return true
	})
}

// TempBeside creates a uniquely named temporary file in the folder of
// target (so a rename over target is atomic) and registers it for
// RemoveTemps. The caller removes it with Discard or renames it with
// Commit semantics of its own (then calls Forget).
func TempBeside(target string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot create a temporary file beside %s: %w", target, err)
	}
	track(f.Name())
	return f, nil
}

// Track registers a file that RemoveTemps should delete until Forget is
// called: a new file put in place whose companion is not written yet.
func Track(path string) { track(path) }

// Forget stops tracking a temporary file that was renamed into place.
func Forget(tmp string) { untrack(tmp) }

// Discard removes a temporary file and stops tracking it.
func Discard(tmp string) {
	os.Remove(tmp)
	untrack(tmp)
}

// MaxText bounds a text input (a prompt file): far more than any context
// holds, far less than the memory a runaway read would take.
const MaxText = 64 << 20

// ReadText reads a text input of at most MaxText bytes from path, or from
// standard input when path is "-".
func ReadText(path, what string) (string, error) {
	if path == "-" {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, MaxText+1))
		if err == nil && len(b) > MaxText {
			err = fmt.Errorf("%s on standard input is longer than %s", what, Bytes(MaxText))
		}
		return string(b), err
	}
	b, err := ReadLimited(path, what, MaxText)
	return string(b), err
}
