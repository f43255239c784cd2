//go:build !unix

package runtime

import "os"

// mapReadOnly reads the whole file where memory mapping is not available.
func mapReadOnly(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}

// dropPages does nothing without memory mapping.
func dropPages([]byte) {}
