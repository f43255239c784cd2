package hugepage

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

func advise(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }

// Alloc returns size zeroed bytes of anonymous memory aligned to a huge
// page, with huge pages advised, and the function that frees them.
func Alloc(size int) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	m, err := unix.Mmap(-1, 0, size+Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("allocating %d bytes: %w", size, err)
	}
	skip := int(-uintptr(unsafe.Pointer(&m[0])) & (Size - 1))
	buf := m[skip : skip+size : skip+size]
	Advise(buf)
	return buf, func() error { return unix.Munmap(m) }, nil
}
