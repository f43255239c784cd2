package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
	"github.com/weft-ml/weft/runtime"
)

// A plan compiled by a program with a pass of its own shows that pass in
// graphc dump (text and JSON) like the built-ins, and --after names it as
// the program's.
func TestDumpShowsInsertedPass(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "s.plan")
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf")
	eps := passes.New("wide-eps", func(g *graph.Graph) (passes.Change, error) {
		var c passes.Change
		for _, n := range g.Nodes {
			if n.Op == ops.RMSNorm && n.Layer == 2 {
				n.Attrs["eps"] = 0.5
				c.Count++
			}
		}
		return c, nil
	})
	p, err := runtime.CompileTo(model, plan, runtime.CompileOptions{Ctx: 64, Insert: []passes.Insertion{{Pass: eps, After: "simplify"}}})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	for format, want := range map[string]string{"text": "# pass wide-eps        146 ->  146 nodes, 2 changes", "json": `"name": "wide-eps"`} {
		out := filepath.Join(dir, "g."+format)
		require.NoError(t, runDump([]string{plan, "--format", format, "-o", out}))
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Contains(t, string(b), want, format)
	}
	assert.ErrorContains(t, runDump([]string{plan, "--after", "wide-eps"}), "the compiling program's own")
	assert.ErrorContains(t, runDump([]string{plan, "--after", "nonesuch"}), "unknown pass")
}
