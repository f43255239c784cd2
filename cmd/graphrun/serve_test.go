package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/browsertest"
	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/serve"
)

func TestServeUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runServe(context.Background(), nil, &out, &errOut)
	assert.ErrorIs(t, err, errUsage)
	assert.Contains(t, errOut.String(), "usage: graphrun serve")
	err = runBenchServe(context.Background(), []string{"http://127.0.0.1:1", "--concurrency", "1,x"}, &out, &errOut)
	assert.ErrorIs(t, err, errUsage)
}

// TestBenchServeAgainstServer measures a weft server twice (as if two
// servers) over two levels, and checks the table, the JSON and the chart,
// the chart in headless Chromium.
func TestBenchServeAgainstServer(t *testing.T) {
	m, err := runtime.Open(stories(t), runtime.Options{Threads: 1})
	require.NoError(t, err)
	defer m.Close()
	s, err := serve.New(m, serve.Options{Parallel: 2})
	require.NoError(t, err)
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	dir := t.TempDir()
	svg, js := filepath.Join(dir, "serve.svg"), filepath.Join(dir, "serve.json")
	var out, errOut bytes.Buffer
	err = runBenchServe(context.Background(), []string{ts.URL, ts.URL, "--labels", "weft,again", "--concurrency", "1,2",
		"--requests", "3", "--max-tokens", "8", "--svg", svg, "--json", js}, &out, &errOut)
	require.NoError(t, err, errOut.String())
	table := out.String()
	t.Log("\n" + table)
	assert.Contains(t, table, "ttft p50")
	assert.Regexp(t, `weft\s+2\s+3\s+0\s`, table)
	assert.Contains(t, table, "weft / again throughput: c1 ")
	var doc struct {
		Servers []serverResult
	}
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Servers, 2)
	for _, lv := range doc.Servers[0].Levels {
		assert.Equal(t, 3*8, lv.Tokens)
		assert.Greater(t, lv.TokS, 0.0)
		assert.Greater(t, lv.TTFTP50, 0.0)
	}
	screenshotSVG(t, svg)
}

// screenshotSVG renders the chart in headless Chromium and checks that
// both servers' lines are drawn.
func screenshotSVG(t *testing.T, svg string) {
	text, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.NotContains(t, string(text), "https://", "the chart refers to the network")
	img := browsertest.Screenshot(t, svg, 1560, 420)
	blue := browsertest.Count(img, img.Bounds(), browsertest.Colour{R: 0x31, G: 0x82, B: 0xbd}, 24)
	orange := browsertest.Count(img, img.Bounds(), browsertest.Colour{R: 0xe6, G: 0x55, B: 0x0d}, 24)
	t.Logf("line pixels: blue %d, orange %d", blue, orange)
	assert.Greater(t, blue, 300, "the first server's lines")
	assert.Greater(t, orange, 300, "the second server's lines")
}

func TestQuantile(t *testing.T) {
	assert.Equal(t, 0.0, quantile(nil, 0.5))
	assert.Equal(t, 2.0, quantile([]float64{3, 1, 2}, 0.5))
	assert.InDelta(t, 2.9, quantile([]float64{1, 2, 3}, 0.95), 1e-9)
	assert.Equal(t, 5.0, niceCeil(4.2))
	assert.Equal(t, 200.0, niceCeil(101))
	assert.True(t, strings.HasPrefix(benchPrompt(0, 1, 2, 3), "Story 0.1.2: "))
}
