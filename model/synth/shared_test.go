package synth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
)

// repoRoot is the folder holding go.mod.
func repoRoot(t testing.TB) string { return testenv.RepoRoot(t) }

// sharedModel opens ../shared/models/name, skipping when absent.
func sharedModel(t testing.TB, name string) *gguf.File {
	t.Helper()
	path := filepath.Join(repoRoot(t), "..", "shared", "models", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not found: shared test models are absent", path)
	}
	return openT(t, path)
}

func openT(t testing.TB, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// stories opens the repository's own testdata/stories260K.gguf (F32).
func stories(t testing.TB) *gguf.File {
	return openT(t, filepath.Join(repoRoot(t), "testdata", "stories260K.gguf"))
}
