package safefile

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate reserves the file's blocks (fallocate).
func allocate(f *os.File, size int64) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, size)
}
