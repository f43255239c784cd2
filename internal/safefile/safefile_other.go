//go:build !unix

package safefile

import "os"

func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }

func openInPlace(path string) (*os.File, error) { return os.OpenFile(path, os.O_WRONLY, 0) }

func setBlocking(*os.File) error { return nil }

// Reserve sets the file's size; other systems get no space check.
func Reserve(f *os.File, size int64) error { return f.Truncate(size) }
