//go:build unix

package gguf

import (
	"os"

	"github.com/weft-ml/weft/internal/hugepage"
	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of fh read-only. An empty file maps to an empty
// slice so that Parse reports it as truncated.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	data, err := unix.Mmap(int(fh.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	hugepage.Advise(data)
	return data, func() error { return unix.Munmap(data) }, nil
}
