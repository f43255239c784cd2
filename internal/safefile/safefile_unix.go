//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
}

// openInPlace opens a device or pipe for writing without waiting for a
// reader: a FIFO nobody reads is an error at once, not a hang.
func openInPlace(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENXIO) {
		return nil, errors.New("it is a named pipe (FIFO) that no program is reading")
	}
	if err != nil {
		return nil, err
	}
	if err := setBlocking(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// setBlocking clears O_NONBLOCK again on a regular file (it has no effect
// on regular files, but mappings and plain reads should not see it).
func setBlocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

// Reserve allocates size bytes of disk for f before it is written through
// a mapping: without it, a full disk turns a store into the mapping into
// SIGBUS. It checks free space first to say how much is missing.
func Reserve(f *os.File, size int64) error {
	if size <= 0 {
		return nil
	}
	dir := filepath.Dir(f.Name())
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err == nil {
		free := int64(st.Bavail) * int64(st.Bsize)
		if free >= 0 && free < size {
			return fmt.Errorf("not enough disk space in %s: need %s, %s free", dir, Bytes(size), Bytes(free))
		}
	}
	err := allocate(f, size)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("not enough disk space in %s: need %s", dir, Bytes(size))
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return writeZeros(f, size)
	}
	return fmt.Errorf("reserving %s in %s: %w", Bytes(size), dir, err)
}

// writeZeros reserves space where fallocate is not supported by writing it.
func writeZeros(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return fmt.Errorf("not enough disk space in %s: need %s", filepath.Dir(f.Name()), Bytes(size))
			}
			return err
		}
	}
	return nil
}
