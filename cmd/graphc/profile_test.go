package main

import (
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/runtime"
)

// storiesProfile benchmarks stories260K on the CPU with a profile and
// writes it to dir/p.json.
func storiesProfile(t *testing.T, dir string) (string, *runtime.Profile) {
	m, err := runtime.Open(stories(t), runtime.Options{Threads: 1})
	require.NoError(t, err)
	defer m.Close()
	res, err := m.Bench(runtime.BenchOptions{PromptTokens: 4, GenTokens: 4, Reps: 1, Profile: true})
	require.NoError(t, err)
	path := filepath.Join(dir, "p.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, res.Profile.WriteJSON(f))
	require.NoError(t, f.Close())
	return path, res.Profile
}

func TestDumpProfileErrors(t *testing.T) {
	dir := t.TempDir()
	prof, p := storiesProfile(t, dir)
	junk := filepath.Join(dir, "junk.json")
	require.NoError(t, os.WriteFile(junk, []byte(`{"nodes":[]}`), 0o644))
	// The same profile with every node renamed: it fits no graph.
	renamed := *p
	renamed.Phases = append([]runtime.ProfilePhase(nil), p.Phases...)
	ph := &renamed.Phases[0]
	ph.Nodes = append([]runtime.ProfileNode(nil), ph.Nodes...)
	for i := range ph.Nodes {
		ph.Nodes[i].Name = "other." + ph.Nodes[i].Name
	}
	data, err := json.Marshal(&renamed)
	require.NoError(t, err)
	other := filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(other, data, 0o644))
	page := filepath.Join(dir, "g.html")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", prof}, "add --format html"},
		{[]string{"--format", "json", "--profile", prof}, "add --format html"},
		{[]string{"--format", "html", "--after", "fuse-qkv", "--profile", prof}, "leave out --after"},
		{[]string{"--format", "html", "--phase", "decode"}, "give --profile FILE too"},
		{[]string{"--format", "html", "--profile", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"--format", "html", "--profile", junk}, "not a weft profile"},
		{[]string{"--format", "html", "--profile", prof, "--phase", "prefill 9"}, `no phase "prefill 9" (it has "decode", "prefill 4")`},
		{[]string{"--format", "html", "--profile", other}, "none of the profile's"},
	} {
		err := runDump(append([]string{stories(t), "-o", page}, c.args...))
		assert.ErrorContains(t, err, c.want, "%v", c.args)
	}
	_, err = os.Stat(page)
	assert.ErrorIs(t, err, os.ErrNotExist, "no page written on a refused dump")
	require.NoError(t, runDump([]string{stories(t), "-o", page, "--format", "html", "--profile", prof, "--phase", "prefill 4"}))
}

// TestDumpHTMLProfileScreenshot renders stories260K's graph coloured by a
// CPU profile in headless Chromium: the optimised view is filled with the
// heat colours (the lowered view and a page without a profile are not),
// and #node=ID shows the top node's hover text with its time.
func TestDumpHTMLProfileScreenshot(t *testing.T) {
	dir := t.TempDir()
	prof, p := storiesProfile(t, dir)
	page, plain := filepath.Join(dir, "graph.html"), filepath.Join(dir, "plain.html")
	require.NoError(t, runDump([]string{stories(t), "--format", "html", "--profile", prof, "-o", page}))
	require.NoError(t, runDump([]string{stories(t), "--format", "html", "-o", plain}))
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	top := p.Phases[0].Nodes[0]
	assert.Contains(t, string(html), "decode, wall time on cpu: ")
	assert.Contains(t, string(html), "≥10%")
	assert.Regexp(t, regexp.MustCompile(`data-id="`+itoa(top.ID)+`" data-info="[^"]*profile, decode: [0-9.]+ µs per step`), string(html))
	assert.NotContains(t, string(html), "https://")

	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): browser check skipped")
	}
	run := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // never hang CI on a stuck browser
		defer cancel()
		cmd := exec.CommandContext(ctx, browser, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1800,1400"}, args...)...)
		out, err := cmd.Output()
		require.NoError(t, err, "chromium %v", args)
		return out
	}
	heat := func(file string) (left, right int) {
		shot := filepath.Join(dir, filepath.Base(file)+".png")
		run("--screenshot="+shot, "file://"+file)
		f, err := os.Open(shot)
		require.NoError(t, err)
		defer f.Close()
		img, err := png.Decode(f)
		require.NoError(t, err)
		w := img.Bounds().Dx()
		// Below the bar (its legend has heat swatches too).
		return countHeat(img, 0, w/2, 60), countHeat(img, w/2, w, 60)
	}
	left, right := heat(page)
	t.Logf("heat-coloured pixels: lowered view %d, optimised view %d", left, right)
	assert.Greater(t, right, 3000, "the profiled view is coloured by time")
	assert.Less(t, left*10, right, "the lowered view is not")
	pl, pr := heat(plain)
	assert.Less(t, pl+pr, right/10, "a page without a profile has no heat colours")

	dom := string(run("--dump-dom", "--virtual-time-budget=2000", "file://"+page+"#node="+itoa(top.ID)))
	tip := regexp.MustCompile(`<div id="tip" style="([^"]*)">([^<]*)</div>`).FindStringSubmatch(dom)
	require.NotNil(t, tip, "the tip in the page's DOM")
	assert.Contains(t, tip[1], "display: block", "#node=ID shows the tip")
	assert.Contains(t, tip[2], top.Name)
	assert.Contains(t, tip[2], "µs per step")
	assert.Contains(t, tip[2], "GB/s")
	assert.Regexp(t, `class="node[a-z ]* picked" data-id="`+itoa(top.ID)+`"`, dom, "the node outlined")
}

func itoa(i int) string { return strconv.Itoa(i) }

// countHeat counts pixels of the two darkest heat colours and the 1–3%
// orange in columns [x0, x1) below row y0.
func countHeat(img image.Image, x0, x1, y0 int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y + y0; y < b.Max.Y; y++ {
		for x := b.Min.X + x0; x < b.Min.X+x1; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			for _, c := range [][3]int{{0x80, 0x00, 0x26}, {0xe3, 0x1a, 0x1c}, {0xfd, 0x8d, 0x3c}} {
				if near(r>>8, c[0]) && near(g>>8, c[1]) && near(bl>>8, c[2]) {
					n++
				}
			}
		}
	}
	return n
}
