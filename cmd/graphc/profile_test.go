package main

import (
	"encoding/json"
	"image"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/browsertest"
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

	heat := func(file string) (left, right int) {
		img := browsertest.Screenshot(t, file, 1800, 1400)
		b := img.Bounds()
		half, below := b.Min.X+b.Dx()/2, b.Min.Y+60 // below the bar (its legend has heat swatches too)
		return countHeat(img, image.Rect(b.Min.X, below, half, b.Max.Y)), countHeat(img, image.Rect(half, below, b.Max.X, b.Max.Y))
	}
	left, right := heat(page)
	t.Logf("heat-coloured pixels: lowered view %d, optimised view %d", left, right)
	assert.Greater(t, right, 3000, "the profiled view is coloured by time")
	assert.Less(t, left*10, right, "the lowered view is not")
	pl, pr := heat(plain)
	assert.Less(t, pl+pr, right/10, "a page without a profile has no heat colours")

	dom := string(browsertest.Run(t, 1800, 1400, "--dump-dom", "--virtual-time-budget=2000", "file://"+page+"#node="+itoa(top.ID)))
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
// orange within area.
func countHeat(img image.Image, area image.Rectangle) int {
	n := 0
	for _, c := range []browsertest.Colour{{R: 0x80, G: 0x00, B: 0x26}, {R: 0xe3, G: 0x1a, B: 0x1c}, {R: 0xfd, G: 0x8d, B: 0x3c}} {
		n += browsertest.Count(img, area, c, 24)
	}
	return n
}
