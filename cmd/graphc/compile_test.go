package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-ml/weft/internal/testenv"
)

func TestCompileAndDump(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "s.plan")
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf")
	if err := runCompile([]string{model, "-o", plan, "--ctx", "256"}); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json", "dot"} {
		out := filepath.Join(dir, "g."+format)
		if err := runDump([]string{plan, "--format", format, "-o", out}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		b, _ := os.ReadFile(out)
		want := map[string]string{"text": "Attention", "json": `"op": "Attention"`, "dot": "digraph"}[format]
		if !strings.Contains(string(b), want) {
			t.Errorf("%s dump lacks %q", format, want)
		}
	}
	if err := runDump([]string{plan, "--format", "svgx"}); err == nil {
		t.Error("unknown format accepted")
	}
	if err := runCompile([]string{filepath.Join(dir, "nope.gguf")}); err == nil {
		t.Error("missing model compiled")
	}
}
