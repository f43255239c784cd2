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

// mapNewFile builds the file's contents in memory and writes them when
// released: no shared file mappings here.
func mapNewFile(path string, size int) ([]byte, func() error, error) {
	data := make([]byte, size)
	return data, func() error { return os.WriteFile(path, data, 0o644) }, nil
}
