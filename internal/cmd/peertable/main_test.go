package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/browsertest"
	"github.com/weft-ml/weft/internal/testenv"
)

// llamaJSON is llama-bench's JSON for one file: a prompt test and a
// generation test with their samples.
func llamaJSON(pp, tg []string) string {
	return `[{"n_prompt": 512, "n_gen": 0, "avg_ts": 1, "samples_ts": [` + strings.Join(pp, ", ") + `]},
	{"n_prompt": 0, "n_gen": 128, "avg_ts": 1, "samples_ts": [` + strings.Join(tg, ", ") + `]}]`
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
}

// Medians of the peer's samples (not its mean: the slow first sample is
// ignored), weft's report as JSON or as text, and each round's ratio.
func TestTable(t *testing.T) {
	dir := t.TempDir()
	// Round 1: the peer's first prompt sample is slow; its median is 100.
	write(t, dir, "ik-q8_0-r1.json", llamaJSON([]string{"10", "100", "100", "101", "99"}, []string{"50", "50", "50"}))
	write(t, dir, "weft-q8_0-r1.json", `{"prefill_tok_s": {"median": 90}, "decode_tok_s": {"median": 60}}`)
	// Round 2: weft's text table.
	write(t, dir, "ik-q8_0-r2.json", llamaJSON([]string{"80", "80", "80"}, []string{"40", "40", "40"}))
	write(t, dir, "weft-q8_0-r2.txt", "model x\ntest median p95 cv runs\npp512  88.00 87.00 0.1% 88 88\ntg128 60.00 59.00 0.1% 60 60\n")
	write(t, dir, "ik-q4_0-r1.json", llamaJSON([]string{"100"}, []string{"50"}))
	write(t, dir, "weft-q4_0-r1.txt", "pp512 120.00\ntg128 75.00\n")
	// A peer result without weft's: left out, and said so.
	write(t, dir, "ik-f16-r1.json", llamaJSON([]string{"100"}, []string{"50"}))
	write(t, dir, "notes.txt", "not a result")
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{dir}, "", &out, &errOut))
	lines := strings.Split(out.String(), "\n")
	require.GreaterOrEqual(t, len(lines), 6, out.String())
	assert.Contains(t, lines[0], "Beside ik_llama.cpp")
	// Q4_0 before Q8_0 (typeOrder); pp 1.20×, tg 1.50×.
	assert.Equal(t, "| Q4_0 | 1 | 120 | 100 | 1.20× (1.20) | 75.0 | 50.0 | 1.50× (1.50) |", lines[4])
	// Q8_0: pp ratios 0.90 and 1.10 (median 1.00, one round below: ⚠);
	// tg 1.20 and 1.50.
	assert.Equal(t, "| Q8_0 | 2 | 88–90 | 80–100 | 1.00× (0.90–1.10) ⚠ | 60.0 | 40.0–50.0 | 1.35× (1.20–1.50) |", lines[5])
	assert.NotContains(t, out.String(), "F16")
	assert.Contains(t, errOut.String(), "ik-f16-r1.json has no weft result beside it")
}

// Results it cannot read are errors that name the file, not a table.
func TestBadResults(t *testing.T) {
	for _, c := range []struct {
		name, peer, weftName, weft, want string
	}{
		{"peer not JSON", "{", "weft-q8_0-r1.txt", "pp512 1\ntg128 1\n", "not llama-bench's JSON"},
		{"peer without samples", `[{"n_prompt": 512, "n_gen": 0}]`, "weft-q8_0-r1.txt", "pp512 1\ntg128 1\n", "without samples_ts"},
		{"peer without generation", `[{"n_prompt": 512, "n_gen": 0, "samples_ts": [1]}]`, "weft-q8_0-r1.txt", "pp512 1\ntg128 1\n", "one prompt test and one generation test"},
		{"weft table without tg", llamaJSON([]string{"1"}, []string{"1"}), "weft-q8_0-r1.txt", "pp512 1\n", "no pp and tg rows"},
		{"weft JSON without decode", llamaJSON([]string{"1"}, []string{"1"}), "weft-q8_0-r1.json", `{"prefill_tok_s": {"median": 1}}`, "with prefill and decode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "llama-q8_0-r1.json", c.peer)
			write(t, dir, c.weftName, c.weft)
			var out, errOut bytes.Buffer
			err := run([]string{dir}, "", &out, &errOut)
			require.ErrorContains(t, err, c.want)
			assert.Empty(t, out.String())
		})
	}
	var out, errOut bytes.Buffer
	assert.ErrorContains(t, run([]string{t.TempDir()}, "", &out, &errOut), "no round with both")
	assert.Error(t, run([]string{filepath.Join(t.TempDir(), "missing")}, "", &out, &errOut))
}

// The committed results give the figures docs/benchmarks-vulkan.md
// quotes: session 27's (Q8_0 prefill at the edge beside mainline, decode
// ahead of ik) and session 28's (Q4_0 and Q8_0 beside mainline after the
// prefill gate·up took over the down's quantization: every Q8_0 round at
// least 1.05×).
func TestCommittedResults(t *testing.T) {
	for _, c := range []struct {
		session string
		dirs    int
		lines   []string
	}{
		{"gpu-peers-s27", 3, []string{
			"| Q8_0 | 4 | 36817–36956 | 35023–38264 | 1.03× (0.97–1.05) ⚠ |",
			"| Q8_0 | 2 | 36740–36815 | 46389–46960 | 0.79× (0.78–0.79) ⚠ | 892.7–927.8 | 749.2–752.7 | 1.21× (1.19–1.24) |",
			"| F16 | 4 | 55623–55810 | 45803–51267 | 1.20× (1.08–1.22) |",
		}},
		{"gpu-peers-s28", 2, []string{
			"| Q8_0 | 5 | 38883–39078 | 34867–37155 | 1.11× (1.05–1.12) |",
			"| Q4_0 | 5 | 41703–42265 | 34460–36531 | 1.21× (1.15–1.22) |",
		}},
	} {
		dirs := committedDirs(t, c.session)
		require.Len(t, dirs, c.dirs, c.session)
		var out, errOut bytes.Buffer
		require.NoError(t, run(dirs, "", &out, &errOut))
		assert.Empty(t, errOut.String())
		for _, line := range c.lines {
			assert.Contains(t, out.String(), line, c.session)
		}
	}
}

// The chart of the committed results is well-formed, has a bar per engine,
// type and phase, marks the ratios below 1.0×, and shows every engine's
// bars in headless Chromium.
func TestChart(t *testing.T) {
	dirs := committedDirs(t, "gpu-peers-s27")
	svg := filepath.Join(t.TempDir(), "peers.svg")
	var out, errOut bytes.Buffer
	require.NoError(t, run(dirs, svg, &out, &errOut))
	data, err := os.ReadFile(svg)
	require.NoError(t, err)
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the chart is not well-formed XML")
	}
	text := string(data)
	// 2 peers × 2 phases × 4 types × 2 bars, the background, 3 legend swatches.
	assert.Equal(t, 2*2*4*2+1+3, strings.Count(text, "<rect"))
	assert.Contains(t, text, `fill="#c00" font-weight="bold">0.79×</text>`, "Q8_0 prefill beside ik_llama.cpp, below 1.0×")
	assert.Contains(t, text, `<title>llama.cpp 35896.7</title>`, "Q8_0 prefill beside llama.cpp: the median of four rounds")
	assert.Contains(t, text, "weft ÷ peer, on NVIDIA H200</text>")
	assert.NotContains(t, text, "https://")
	img := browsertest.Screenshot(t, svg, 1040, 500)
	browsertest.RequireShown(t, img, 5000, browsertest.Engines...)
}

// The committed charts are what the tool draws from the committed results
// (regenerate: go run ./internal/cmd/peertable -svg
// docs/benchmarks-vulkan-peers.svg docs/data/gpu-peers-s27/*/, and
// -svg docs/benchmarks-vulkan-peers-s28.svg docs/data/gpu-peers-s28/*/).
func TestCommittedChartIsCurrent(t *testing.T) {
	root := testenv.RepoRoot(t)
	for chart, session := range map[string]string{"benchmarks-vulkan-peers.svg": "gpu-peers-s27", "benchmarks-vulkan-peers-s28.svg": "gpu-peers-s28"} {
		svg := filepath.Join(t.TempDir(), "peers.svg")
		var out, errOut bytes.Buffer
		require.NoError(t, run(committedDirs(t, session), svg, &out, &errOut))
		want, err := os.ReadFile(svg)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(root, "docs", chart))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "docs/%s is stale: regenerate it", chart)
	}
}

// committedDirs is the result folders of a session under docs/data.
func committedDirs(t *testing.T, session string) []string {
	dirs, err := filepath.Glob(filepath.Join(testenv.RepoRoot(t), "docs", "data", session, "*-*"))
	require.NoError(t, err)
	return dirs
}

// Whatever bytes the result files hold, reading them fails or succeeds;
// it never panics, and what it accepts is positive.
func FuzzReadResults(f *testing.F) {
	f.Add([]byte(llamaJSON([]string{"1", "2"}, []string{"3"})), []byte("pp512 1\ntg128 2\n"))
	f.Add([]byte(`[{"n_prompt": 1, "n_gen": 1, "samples_ts": []}]`), []byte(`{"prefill_tok_s": {"median": 1}, "decode_tok_s": null}`))
	f.Add([]byte("null"), []byte("pp tg\npp512 NaN\ntg -1"))
	f.Fuzz(func(t *testing.T, peer, weft []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "p.json"), peer, 0o644))
		if r, _, err := readPeer(filepath.Join(dir, "p.json")); err == nil {
			assert.True(t, r.valid(), "%+v", r)
		}
		for _, ext := range []string{".json", ".txt"} {
			stem := filepath.Join(t.TempDir(), "weft")
			require.NoError(t, os.WriteFile(stem+ext, weft, 0o644))
			if r, err := readWeft(stem); err == nil {
				assert.True(t, r.valid(), "%+v", r)
			}
		}
	})
}
