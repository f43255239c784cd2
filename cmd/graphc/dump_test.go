package main

import (
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): screenshot check skipped")
	}
	shot := filepath.Join(dir, "graph.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // never hang CI on a stuck browser
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--window-size=1800,1400", "--screenshot="+shot, "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	left, right := countBlue(img, 0, img.Bounds().Dx()/2), countBlue(img, img.Bounds().Dx()/2, img.Bounds().Dx())
	t.Logf("CPU-blue outline pixels: lowered view %d, optimised view %d", left, right)
	if right < 2000 || left*4 > right {
		t.Fatalf("fused outlines not visible: %d blue pixels left, %d right", left, right)
	}
}

// countBlue counts pixels close to #3182bd in columns [x0, x1).
func countBlue(img image.Image, x0, x1 int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X + x0; x < b.Min.X+x1; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, 0x31) && near(g>>8, 0x82) && near(bl>>8, 0xbd) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b int) bool { return int(a)-b < 24 && b-int(a) < 24 }
