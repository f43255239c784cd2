package runtime

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestQuantFixtureReferences runs the models of testdata/quants (the
// weight types llama.cpp's own mixes produce: IQ4_XS, and Q2_K with its
// IQ4_NL fallback for 288-wide rows) against llama.cpp's references with
// the acceptance rule of TestReferenceLogits.
func TestQuantFixtureReferences(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	dir := filepath.Join("..", "testdata", "quants")
	models, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(models) == 0 {
		t.Fatalf("no fixtures in %s", dir)
	}
	for _, path := range models {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) { checkModel(t, path, name, filepath.Join(dir, "reference")) })
	}
}
