//go:build !linux

package hugepage

func advise([]byte) {}

// Alloc returns size bytes from the Go heap: no huge-page advice here.
func Alloc(size int) ([]byte, func() error, error) {
	return make([]byte, size), func() error { return nil }, nil
}
