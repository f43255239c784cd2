package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReportShowsRatiosAndFloor(t *testing.T) {
	r := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 3, threads: 2, bandwidth: 47},
		rows: []row{{bench: bench{defaultShape, "q4_0"}, bytes: 636725856, weftPP: stat{Median: 150}, weftTG: stat{Median: 60}, peerPP: stat{Median: 146, Runs: []float64{146}}, peerTG: stat{Median: 50, Runs: []float64{50}},
			ppRatio: stat{Median: 1.03, Runs: []float64{1.01, 1.03, 1.1}}, tgRatio: stat{Median: 1.2, Runs: []float64{1.2}}, bandwidth: stat{Median: 40}}}}
	md := r.markdown()
	for _, want := range []string{"| Q4_0 | 607 MiB | 150.0 | 146.0 | 1.03× (1.01–1.10) | 60.0 | 50.0 | 1.20× (1.20–1.20) | 73.8 | 81% | 40.0 | 96% |", "benchmarks.svg"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if svg := r.svg(); strings.Count(svg, "<rect") != 2*2+3 {
		t.Errorf("svg has %d rects", strings.Count(svg, "<rect"))
	}
}

func TestParseDepths(t *testing.T) {
	got, err := parseDepths(" 4096, 16384")
	require.NoError(t, err)
	assert.Equal(t, []int{4096, 16384}, got)
	got, err = parseDepths("")
	require.NoError(t, err)
	assert.Nil(t, got)
	for _, bad := range []string{"0", "-5", "4k", "4096,"} {
		_, err := parseDepths(bad)
		assert.ErrorContains(t, err, "-depths", bad)
	}
}

// TestDepthArgs: the depth rows run graphrun bench --depth and
// llama-bench with the flag of the chosen peer.
func TestDepthArgs(t *testing.T) {
	c := config{p: 512, n: 128, r: 2, threads: 2, peerDepth: "d", peerFlags: []string{"-fa", "1"}}
	assert.Equal(t, []string{"bench", "m.gguf", "-p", "512", "-n", "128", "-r", "2", "--threads", "2", "--json", "--depth", "4096"}, weftArgs(c, "m.gguf", 4096))
	assert.Contains(t, weftArgs(c, "m.gguf", 0), "--bandwidth")
	args, err := peerArgs(c, "m.gguf", 4096)
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "m.gguf", "-t", "2", "-r", "2", "-o", "json", "-fa", "1", "-p", "512", "-n", "128", "-d", "4096"}, args)
	c.peerDepth = "gp"
	args, err = peerArgs(c, "m.gguf", 16384)
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "m.gguf", "-t", "2", "-r", "2", "-o", "json", "-fa", "1", "-p", "0", "-n", "0", "-gp", "16384,128"}, args)
	args, err = peerArgs(c, "m.gguf", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "m.gguf", "-t", "2", "-r", "2", "-o", "json", "-fa", "1", "-p", "512", "-n", "128"}, args)
	c.peerDepth = "x"
	_, err = peerArgs(c, "m.gguf", 16384)
	assert.ErrorContains(t, err, "-peer-depth")
}

func TestReportDepthTable(t *testing.T) {
	base := row{bench: bench{defaultShape, "q4_0"}, bytes: 636725856, weftPP: stat{Median: 150}, weftTG: stat{Median: 60}}
	deep := row{bench: bench{defaultShape, "q4_0"}, depth: 4096, bytes: 636725856, weftPP: stat{Median: 90}, weftTG: stat{Median: 40},
		peerPP: stat{Median: 80, Runs: []float64{80}}, peerTG: stat{Median: 32, Runs: []float64{32}},
		ppRatio: stat{Median: 1.12, Runs: []float64{1.1, 1.12, 1.2}}, tgRatio: stat{Median: 1.25, Runs: []float64{1.25}},
		weftRSS: stat{Median: 700 << 20, Runs: []float64{700 << 20}}, peerRSS: stat{Median: 800 << 20, Runs: []float64{800 << 20}}}
	r := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 3, threads: 2, bandwidth: 47, depths: []int{4096}, peerDepth: "d"}, rows: []row{base, deep}}
	md := r.markdown()
	assert.Contains(t, md, "## At depth")
	assert.Contains(t, md, "llama-bench `-d D`")
	assert.Contains(t, md, "| Q4_0 | 4096 | 90.0 | 80.0 | 1.12× (1.10–1.20) | 40.0 | 32.0 | 1.25× (1.25–1.25) | 700 | 800 |")
	assert.Equal(t, 1, strings.Count(md, "| Q4_0 | 607 MiB |"), "the depth row stays out of the main table")
	assert.Equal(t, 2*2+3, strings.Count(r.svg(), "<rect"), "nor in the chart")
	r.rows = []row{base}
	assert.NotContains(t, r.markdown(), "At depth")
}
