package runtime

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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

// TestQuantFixtureReferencesVulkan runs the same fixtures wholly on
// Vulkan (every weight type has shaders: the lattice and ternary types
// too) against the same references and rule.
func TestQuantFixtureReferencesVulkan(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	skipWithoutVulkanDevice(t)
	dir := filepath.Join("..", "testdata", "quants")
	models, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(models) == 0 {
		t.Fatalf("no fixtures in %s", dir)
	}
	for _, path := range models {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			o := Options{Backend: "vulkan", Compile: CompileOptions{Backend: "vulkan"}}
			p, err := Compile(path, o.Compile)
			require.NoError(t, err)
			for _, n := range p.Graph.Nodes {
				if n.Op != "Input" { // graph inputs live in host memory
					require.Equal(t, "vulkan", n.Backend, "node %d (%s %q) placed on %s: %s", n.ID, n.Op, n.Name, n.Backend, n.Cause)
				}
			}
			checkModelOn(t, path, name, filepath.Join(dir, "reference"), o)
		})
	}
}
