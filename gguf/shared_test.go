package gguf

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedDir returns ../shared relative to the repository root (the folder
// holding go.mod), skipping the test when it is absent.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("go.mod not found above the test: cannot locate ../shared")
		}
		dir = parent
	}
	shared := filepath.Join(dir, "..", "shared")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("%s not found: shared test models are absent", shared)
	}
	return shared
}
