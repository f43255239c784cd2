//go:build unix

package runtime

import (
	"os"
	"unsafe"

	"github.com/weft-ml/weft/internal/hugepage"
	"github.com/weft-ml/weft/internal/safefile"
	"golang.org/x/sys/unix"
)

// mapReadOnly maps the whole file at path read-only; the repacked weights
// are read from the page cache like the GGUF ones, never copied.
func mapReadOnly(path string) ([]byte, func() error, error) {
	fh, err := safefile.OpenRegular(path, "side file")
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	data, err := unix.Mmap(int(fh.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	hugepage.Advise(data)
	return data, func() error { return unix.Munmap(data) }, nil
}

// dropPages tells the kernel that this process no longer needs the mapped
// pages lying wholly inside b (a repacked tensor's GGUF bytes), so they
// stop counting towards its resident memory.
func dropPages(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo-start:hi-start], unix.MADV_DONTNEED)
}

// mapReservedFile reserves size bytes of disk for the new file f and maps
// it read-write, so data written to the mapping lands in the file. The
// reservation comes first: a full disk is then an error here rather than a
// SIGBUS in the middle of repacking.
func mapReservedFile(f *os.File, size int) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if err := safefile.Reserve(f, int64(size)); err != nil {
		return nil, nil, err
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return unix.Munmap(data) }, nil
}
