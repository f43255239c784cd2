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

// mapReservedFile builds the file's contents in memory and writes them
// when released: no shared file mappings here.
func mapReservedFile(f *os.File, size int) ([]byte, func() error, error) {
	data := make([]byte, size)
	return data, func() error { _, err := f.WriteAt(data, 0); return err }, nil
}
