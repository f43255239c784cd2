package examples

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/testenv"
)

// Each example runs with go run from the repository root, as its doc
// comment says.
func TestExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three programs")
	}
	for name, want := range map[string]string{
		"customact":    "same story as the built-in SiLU: true",
		"mlp":          "xor(1, 1) = 0.00",
		"residualnorm": "blk.4.ffn_out+l_out",
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("go", "run", "./examples/"+name)
			cmd.Dir = testenv.RepoRoot(t)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.True(t, strings.Contains(string(out), want), "%s", out)
		})
	}
}
