package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding go.mod, walking up from the
// working directory (a package directory under go test).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Shared returns ../shared/<sub> beside the repository, skipping the test
// with a clear message when it is absent.
func Shared(t testing.TB, sub string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), "..", "shared", sub)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared fixtures not found at %s: this test needs the project's ../shared folder", p)
	}
	return p
}
