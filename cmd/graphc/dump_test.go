package main

import (
	"encoding/json"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-ml/weft/internal/browsertest"
	"github.com/weft-ml/weft/internal/testenv"
)

func stories(t *testing.T) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf")
}

// TestDumpJSON checks the fields tools rely on.
func TestDumpJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "g.json")
	if err := runDump([]string{stories(t), "--format", "json", "-o", out}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Nodes []struct {
			ID      int                           `json:"id"`
			Op      string                        `json:"op"`
			Inputs  []int                         `json:"inputs"`
			Shape   []string                      `json:"shape"`
			DType   string                        `json:"dtype"`
			Backend string                        `json:"backend"`
			Cause   string                        `json:"cause"`
			Buffer  *struct{ Offset, Size int64 } `json:"buffer"`
		} `json:"nodes"`
		Passes []struct {
			Name    string
			Changes int
		} `json:"passes"`
		ArenaBytes map[string]int64 `json:"arena_bytes"`
	}
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	buffers := 0
	for _, n := range doc.Nodes {
		ops[n.Op] = true
		if n.Backend != "cpu" || n.Cause == "" || n.DType == "" || len(n.Shape) == 0 {
			t.Fatalf("node %d (%s) lacks placement or type: %+v", n.ID, n.Op, n)
		}
		if n.Buffer != nil {
			buffers++
		}
	}
	if !ops["MatMulQKV"] || !ops["RMSNormMul"] || buffers == 0 || doc.ArenaBytes["cpu"] == 0 || len(doc.Passes) == 0 {
		t.Fatalf("ops %v, %d buffers, arenas %v, %d passes", ops, buffers, doc.ArenaBytes, len(doc.Passes))
	}
}

// TestDumpHTMLScreenshot renders the before/after page of stories260K in
// headless Chromium and checks the picture: placement outlines (CPU blue,
// thick around fused nodes) appear only in the right-hand, optimised view.
func TestDumpHTMLScreenshot(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "graph.html")
	if err := runDump([]string{stories(t), "--format", "html", "-o", page}); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(page)
	if strings.Contains(string(html), "http://") && !strings.Contains(string(html), "http://www.w3.org/2000/svg") || strings.Contains(string(html), "https://") {
		t.Fatal("the page refers to the network")
	}
	img := browsertest.Screenshot(t, page, 1800, 1400)
	b, blue := img.Bounds(), browsertest.Colour{R: 0x31, G: 0x82, B: 0xbd}
	half := b.Min.X + b.Dx()/2
	left := browsertest.Count(img, image.Rect(b.Min.X, b.Min.Y, half, b.Max.Y), blue, 24)
	right := browsertest.Count(img, image.Rect(half, b.Min.Y, b.Max.X, b.Max.Y), blue, 24)
	t.Logf("CPU-blue outline pixels: lowered view %d, optimised view %d", left, right)
	if right < 2000 || left*4 > right {
		t.Fatalf("fused outlines not visible: %d blue pixels left, %d right", left, right)
	}
}
