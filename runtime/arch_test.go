package runtime

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model"
)

// TestArchFixturesCompile requires every architecture fixture in
// ../shared/models-arch to compile: TestReferenceLogits skips the ones
// weft cannot lower, and this keeps that skip from hiding a regression
// of a supported architecture.
func TestArchFixturesCompile(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(testenv.Shared(t, "models-arch"), "*.gguf"))
	require.NotEmpty(t, paths, "no fixtures in ../shared/models-arch")
	archs := map[string]bool{}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			p, err := Compile(path, CompileOptions{})
			require.NoError(t, err)
			archs[p.Params.Arch] = true
		})
	}
	for _, a := range []string{"qwen2", "phi2", "gemma", "llama"} {
		assert.True(t, archs[a], "no %s fixture compiled", a)
		assert.True(t, model.Supported(a), a)
	}
}
