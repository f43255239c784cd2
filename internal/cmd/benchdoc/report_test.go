package main

import (
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/browsertest"
	"github.com/weft-ml/weft/internal/testenv"
)

func runs(xs ...float64) stat { return stat{Median: xs[len(xs)/2], Runs: xs} }

var (
	llamaOnly = []peer{llamaPeer("/opt/llama/llama-bench", nil, "d", "make")}
	withIK    = []peer{llamaPeer("/opt/llama/llama-bench", nil, "none", "make"),
		ikPeer("/opt/ik/bin/llama-bench", strings.Fields(ikDefaultFlags), ikDefaultDepth, "cmake -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON")}
)

func TestReportShowsRatiosAndFloor(t *testing.T) {
	r := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 3, threads: 2, bandwidth: 47, peers: llamaOnly},
		rows: []row{{bench: bench{shape: defaultShape, typ: "q4_0"}, bytes: 636725856, weftPP: stat{Median: 150}, weftTG: stat{Median: 60}, bandwidth: stat{Median: 40},
			peers: []peerResult{{pp: runs(146), tg: runs(50), ppRatio: runs(1.01, 1.03, 1.1), tgRatio: runs(1.2), commit: "c392e509"}}}}}
	md := r.markdown()
	for _, want := range []string{"| Q4_0 | 607 MiB | 150.0 | 146.0 | 1.03× (1.01–1.10) | 60.0 | 50.0 | 1.20× (1.20–1.20) | 73.8 | 81% | 40.0 | 96% |", "benchmarks.svg",
		"| weft pp | llama.cpp pp | weft/llama.cpp (target ≥ 1.0×) | weft tg | llama.cpp tg | weft/llama.cpp (target ≥ 1.2×) |",
		"llama.cpp: commit `c392e509`, built with `make`, run as `llama-bench -m FILE -t 2 -r 3 -o json -p 512 -n 128`."} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "ik")
	assert.Equal(t, 2*2+3, strings.Count(r.svg(), "<rect"))
}

// TestReportThreeColumns: with -ik-bench, ik_llama.cpp has its columns
// beside llama.cpp's in the table, the variation line and the chart, and
// the text says how each peer was built and run.
func TestReportThreeColumns(t *testing.T) {
	r := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 2, threads: 2, bandwidth: 47, peers: withIK},
		rows: []row{{bench: bench{shape: defaultShape, typ: "bf16"}, bytes: 2200 << 20, weftPP: stat{Median: 100, CV: 0.03}, weftTG: stat{Median: 20, CV: 0.05}, bandwidth: stat{Median: 40},
			peers: []peerResult{
				{pp: stat{Median: 80, Runs: []float64{80}, CV: 0.02}, tg: runs(16), ppRatio: runs(1.2, 1.25, 1.3), tgRatio: runs(1.25), commit: "unknown"},
				{pp: stat{Median: 250, Runs: []float64{250}, CV: 0.04}, tg: runs(18), ppRatio: runs(0.38, 0.4, 0.41), tgRatio: runs(1.05, 1.11, 1.2), commit: "8337e4cd"},
			}}}}
	md := r.markdown()
	t.Log(md)
	for _, want := range []string{
		"| weights | file | weft pp | llama.cpp pp | weft/llama.cpp (target ≥ 1.0×) | ik pp | weft/ik (target ≥ 1.2×) | weft tg | llama.cpp tg | weft/llama.cpp (target ≥ 1.2×) | ik tg | weft/ik (target ≥ 1.0×) | floor |",
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
		"| BF16 | 2200 MiB | 100.0 | 80.0 | 1.25× (1.20–1.30) | 250.0 | 0.40× (0.38–0.41) | 20.0 | 16.0 | 1.25× (1.25–1.25) | 18.0 | 1.11× (1.05–1.20) | 20.4 | 98% | 40.0 | 115% |",
		"with 2 repetitions, llama.cpp and ik_llama.cpp, in rotating order",
		"llama.cpp: commit `unknown`, built with `make`",
		"ik_llama.cpp: commit `8337e4cd`, built with `cmake -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON`, run as `llama-bench -m FILE -t 2 -r 2 -o json -rtr 1 -fa 1 -p 512 -n 128`.",
		"Variation (coefficient of variation, weft / llama.cpp / ik): bf16 pp 3% / 2% / 4%, tg 5% / 0% / 0%.",
	} {
		assert.Contains(t, md, want)
	}
	header := md[strings.Index(md, "| weights"):]
	lines := strings.SplitN(header, "\n", 4)
	for _, l := range lines[:3] {
		assert.Equal(t, 17, strings.Count(l, "|"), "every line of the table has 16 cells: %s", l)
	}
	svg := r.svg()
	assert.Equal(t, 2*3+4, strings.Count(svg, "<rect"), "three bars per panel and a legend entry per side")
	assert.Contains(t, svg, `fill="#e6550d"><title>ik_llama.cpp 250.0</title>`)
	assert.Contains(t, svg, ">ik_llama.cpp</text>")
}

// TestReportPeerFailure: a peer that cannot run a weight type leaves its
// cells "failed" and says why below the table.
func TestReportPeerFailure(t *testing.T) {
	r := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 2, threads: 2, bandwidth: 47, peers: withIK},
		rows: []row{{bench: bench{shape: defaultShape, typ: "iq4_xs"}, bytes: 600 << 20, weftPP: stat{Median: 100}, weftTG: stat{Median: 20},
			peers: []peerResult{{pp: runs(80), tg: runs(16), ppRatio: runs(1.25), tgRatio: runs(1.25)}, {err: "exit status 1"}}}}}
	md := r.markdown()
	assert.Contains(t, md, "| 80.0 | 1.25× (1.25–1.25) | failed | – | 20.0 |")
	assert.Contains(t, md, "ik_llama.cpp failed on IQ4_XS: exit status 1")
	r.cfg.peers = []peer{llamaPeer("", nil, "d", ""), withIK[1]}
	r.rows[0].peers[0] = peerResult{}
	md = r.markdown()
	assert.Contains(t, md, "| 100.0 | not run | – | failed | – |")
	assert.Contains(t, md, "llama.cpp: not run (give -llama-bench).")
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

// TestDepthArgs: the depth rows run graphrun bench --depth and each
// llama-bench with the flag of its kind, after the peer's own flags.
func TestDepthArgs(t *testing.T) {
	c := config{p: 512, n: 128, r: 2, threads: 2}
	llama := llamaPeer("lb", []string{"-fa", "1"}, "d", "")
	assert.Equal(t, []string{"bench", "m.gguf", "-p", "512", "-n", "128", "-r", "2", "--threads", "2", "--json", "--depth", "4096"}, weftArgs(c, "m.gguf", 4096))
	assert.Contains(t, weftArgs(c, "m.gguf", 0), "--bandwidth")
	c.weftDepthFlags = []string{"--flash-attn"}
	assert.Equal(t, []string{"--depth", "4096", "--flash-attn"}, weftArgs(c, "m.gguf", 4096)[11:])
	assert.NotContains(t, weftArgs(c, "m.gguf", 0), "--flash-attn")
	c.weftDepthFlags = nil
	args, err := peerArgs(c, llama, "m.gguf", 4096)
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "m.gguf", "-t", "2", "-r", "2", "-o", "json", "-fa", "1", "-p", "512", "-n", "128", "-d", "4096"}, args)
	ik := ikPeer("ib", strings.Fields(ikDefaultFlags), "gp", "")
	args, err = peerArgs(c, ik, "m.gguf", 16384)
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "m.gguf", "-t", "2", "-r", "2", "-o", "json", "-rtr", "1", "-fa", "1", "-p", "0", "-n", "0", "-gp", "16384,128"}, args)
	args, err = peerArgs(c, ik, "m.gguf", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "m.gguf", "-t", "2", "-r", "2", "-o", "json", "-rtr", "1", "-fa", "1", "-p", "512", "-n", "128"}, args)
	ik.depth = "pp+gp"
	args, err = peerArgs(c, ik, "m.gguf", 4096)
	require.NoError(t, err)
	assert.Equal(t, []string{"-p", "4096,4608", "-n", "0", "-gp", "4096,128"}, args[12:])
	llama.depth = "x"
	_, err = peerArgs(c, llama, "m.gguf", 16384)
	assert.ErrorContains(t, err, "depth mode")
	assert.True(t, ik.runsAt(4096))
	assert.False(t, llamaPeer("lb", nil, "none", "").runsAt(4096))
	assert.True(t, llamaPeer("lb", nil, "none", "").runsAt(0))
	assert.False(t, llamaPeer("", nil, "d", "").runsAt(0))
}

// TestPeerRates: llama-bench's tests become prefill and decode tok/s; a
// -gp test's n_prompt is the untimed depth, so its runs are decode.
func TestPeerRates(t *testing.T) {
	tests := []peerTest{{Commit: "8337e4cd", NPrompt: 512, Samples: []float64{2e9, 4e9}}, {Commit: "8337e4cd", NGen: 128, Samples: []float64{1e9}}}
	pp, tg, commit := peerRates(tests, false)
	assert.Equal(t, []float64{256, 128}, pp)
	assert.Equal(t, []float64{128}, tg)
	assert.Equal(t, "8337e4cd", commit)
	pp, tg, _ = peerRates([]peerTest{{NPrompt: 4096, NGen: 128, Samples: []float64{4e9}}}, true)
	assert.Empty(t, pp)
	assert.Equal(t, []float64{32}, tg)
}

// TestPeerRatesAtDepth: prefill at depth is the longer prompt's extra
// time, run by run; -gp runs are decode; a run whose difference is not
// positive is dropped rather than turned into a negative rate.
func TestPeerRatesAtDepth(t *testing.T) {
	tests := []peerTest{
		{Commit: "8337e4cd", NPrompt: 4096, Samples: []float64{20e9, 21e9, 30e9}},
		{NPrompt: 4608, Samples: []float64{24e9, 25e9, 29e9}},
		{NPrompt: 4096, NGen: 128, Samples: []float64{8e9, 16e9}},
	}
	pp, tg, commit := peerRatesAtDepth(tests, 4096, 512)
	assert.Equal(t, []float64{128, 128}, pp)
	assert.Equal(t, []float64{16, 8}, tg)
	assert.Equal(t, "8337e4cd", commit)
}

// TestSweep: the sweep mode's command line fills the depth untimed and
// times the step at n_kv = D; its JSONL row at that depth is the sample,
// whatever else the tool prints; a depth not a multiple of -p is refused.
func TestSweep(t *testing.T) {
	c := config{p: 512, n: 32, r: 2, threads: 2}
	ik := ikPeer("ib", nil, "sweep", "")
	ik.sweepFlags = strings.Fields(ikDefaultSweepFlags)
	args, err := sweepArgs(c, ik, "m.gguf", 4096)
	require.NoError(t, err)
	abs, _ := filepath.Abs("m.gguf")
	assert.Equal(t, []string{"-m", abs, "-t", "2", "-c", "4608", "-b", "512", "-ub", "512", "-n", "32",
		"--sweep-stride", "8", "--output-format", "jsonl", "-rtr", "-fa", "1"}, args)
	_, err = sweepArgs(c, ik, "m.gguf", 4000)
	assert.ErrorContains(t, err, "multiple")
	out := []byte("llama_model_load: ...\n" +
		`{"n_kv_max": 4608, "pp": 512, "tg": 32, "n_kv": 0, "t_pp": 2.0, "speed_pp": 256.0, "t_tg": 1.0, "speed_tg": 32.0 }` + "\n" +
		`  {"n_kv_max": 4608, "pp": 512, "tg": 32, "n_kv": 4096, "t_pp": 8.0, "speed_pp": 64.0, "t_tg": 2.0, "speed_tg": 16.0 }` + "\n")
	row, err := sweepRowAt(out, 4096)
	require.NoError(t, err)
	assert.Equal(t, sweepRow{NKV: 4096, SpeedPP: 64, SpeedTG: 16}, row)
	_, err = sweepRowAt(out, 8192)
	assert.ErrorContains(t, err, "n_kv = 8192")
	args, err = peerArgs(c, ik, "m.gguf", 0)
	require.NoError(t, err)
	assert.Contains(t, args, "512", "depth 0 stays llama-bench's -p/-n")
}

// TestChartPath: the report links the chart written beside it, whatever
// -out names.
func TestChartPath(t *testing.T) {
	assert.Equal(t, "docs/benchmarks.svg", chartPath("docs/benchmarks.md"))
	assert.Equal(t, "docs/benchmarks-session20.svg", chartPath("docs/benchmarks-session20.md"))
	assert.Equal(t, "benchmarks.svg", chartPath(""))
	r := report{cfg: config{out: "docs/benchmarks-depth.md", p: 512, n: 128}, rows: []row{{bench: bench{shape: defaultShape, typ: "q4_0"}, bytes: 1 << 20}}}
	assert.Contains(t, r.markdown(), "](benchmarks-depth.svg)")
}

// TestRoundOrder: each side takes every place in turn.
func TestRoundOrder(t *testing.T) {
	assert.Equal(t, []int{0, 1}, roundOrder(2, 1))
	assert.Equal(t, []int{1, 0}, roundOrder(2, 2))
	assert.Equal(t, []int{0, 1, 2}, roundOrder(3, 1))
	assert.Equal(t, []int{1, 2, 0}, roundOrder(3, 2))
	assert.Equal(t, []int{2, 0, 1}, roundOrder(3, 3))
	assert.Equal(t, []int{0}, roundOrder(1, 2))
}

// TestParseFlags: -ik-bench (or IK_BENCH) adds the ik_llama.cpp peer with
// -rtr 1 -fa 1 and its build read from the CMakeCache.txt of its build
// folder; without it only llama.cpp's columns are there.
func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	ikBin := filepath.Join(dir, "ikbuild", "bin", "llama-bench")
	llamaBin := filepath.Join(dir, "llama", "llama-bench")
	for _, f := range []string{ikBin, llamaBin} {
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, nil, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ikbuild", "CMakeCache.txt"),
		[]byte("# comment\nCMAKE_BUILD_TYPE:STRING=Release\nGGML_CCACHE:BOOL=ON\nGGML_NATIVE:BOOL=ON\n"), 0o644))
	parse := func(env map[string]string, args ...string) (config, error) {
		fs := flag.NewFlagSet("benchdoc", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseFlags(fs, args, func(k string) string { return env[k] })
	}
	c, err := parse(map[string]string{"LLAMA_BENCH": llamaBin, "IK_BENCH": ikBin}, "-llama-build", "make -j2")
	require.NoError(t, err)
	require.Len(t, c.peers, 2)
	assert.Equal(t, "make -j2", c.peers[0].build)
	assert.Equal(t, filepath.Join(dir, "llama", "llama-quantize"), c.llamaQuantize)
	assert.Equal(t, ikBin, c.peers[1].bin)
	assert.Equal(t, []string{"-rtr", "1", "-fa", "1"}, c.peers[1].flags)
	assert.Equal(t, "pp+gp", c.peers[1].depth)
	assert.Equal(t, "cmake -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON", c.peers[1].build)

	c, err = parse(nil, "-ik-bench", ikBin, "-ik-flags", "-rtr 1", "-ik-build", "by hand", "-benches", "tinyllama-1.1b:bf16")
	require.NoError(t, err)
	require.Len(t, c.peers, 2)
	assert.Empty(t, c.peers[0].bin)
	assert.Equal(t, []string{"-rtr", "1"}, c.peers[1].flags)
	assert.Equal(t, "by hand", c.peers[1].build)
	assert.Equal(t, []bench{{shape: defaultShape, typ: "bf16"}}, c.benches)

	c, err = parse(map[string]string{"LLAMA_BENCH": llamaBin})
	require.NoError(t, err)
	require.Len(t, c.peers, 1, "no ik column without -ik-bench")
	assert.Empty(t, c.peers[0].build, "no CMakeCache.txt beside a Makefile build")

	_, err = parse(nil, "-ik-bench", filepath.Join(dir, "nowhere"))
	assert.ErrorContains(t, err, "-ik-bench")
	_, err = parse(nil, "-ik-bench", ikBin, "-ik-depth", "sweep", "-depths", "4096")
	assert.ErrorContains(t, err, "-ik-sweep", "no llama-sweep-bench beside llama-bench")
	_, err = parse(nil, "-ik-bench", ikBin, "-ik-depth", "sweep")
	require.NoError(t, err, "no rows at depth: no sweep program needed")
	sweepBin := filepath.Join(dir, "ikbuild", "bin", "llama-sweep-bench")
	require.NoError(t, os.WriteFile(sweepBin, nil, 0o755))
	c, err = parse(nil, "-ik-bench", ikBin, "-ik-depth", "sweep", "-depths", "4096")
	require.NoError(t, err)
	assert.Equal(t, sweepBin, c.peers[1].sweep)
	assert.Equal(t, []string{"-rtr", "-fa", "1"}, c.peers[1].sweepFlags)
	llamaEnv := map[string]string{"LLAMA_BENCH": llamaBin}
	_, err = parse(llamaEnv, "-depths", "4096")
	assert.ErrorContains(t, err, "build-llama-sweep.sh", "sweep is llama.cpp's default at depth: no weft-sweep-bench beside its llama-bench")
	_, err = parse(llamaEnv, "-depths", "4096", "-llama-depth", "gp")
	require.NoError(t, err, "-gp needs no sweep program")
	llamaSweep := filepath.Join(filepath.Dir(llamaBin), "weft-sweep-bench")
	require.NoError(t, os.WriteFile(llamaSweep, nil, 0o755))
	c, err = parse(llamaEnv, "-depths", "4096")
	require.NoError(t, err)
	assert.Equal(t, llamaSweep, c.peers[0].sweep)
	assert.Equal(t, []string{"-fa", "1"}, c.peers[0].sweepFlags)
	assert.Contains(t, peerDepthLabel(c.peers[0]), "`weft-sweep-bench -fa 1 -c D+P")
	_, err = parse(nil, "-depths", "4096")
	require.NoError(t, err, "no llama-bench: its columns read not run, no sweep program needed")
	_, err = parse(nil, "-llama-depth", "x")
	assert.ErrorContains(t, err, "-llama-depth")
	_, err = parse(nil, "stray")
	assert.ErrorContains(t, err, "unexpected arguments")
}

func TestDefaultBenchesHaveBF16AndIQ4XS(t *testing.T) {
	b, err := parseBenches(defaultBenches)
	require.NoError(t, err)
	assert.Contains(t, b, bench{shape: defaultShape, typ: "bf16"})
	assert.Contains(t, b, bench{shape: defaultShape, typ: "iq4_xs"})
}

func TestReportDepthTable(t *testing.T) {
	base := row{bench: bench{shape: defaultShape, typ: "q4_0"}, bytes: 636725856, weftPP: stat{Median: 150}, weftTG: stat{Median: 60}, peers: make([]peerResult, 2)}
	deep := row{bench: bench{shape: defaultShape, typ: "q4_0"}, depth: 4096, bytes: 636725856, weftPP: stat{Median: 90}, weftTG: stat{Median: 40},
		weftRSS: runs(700 << 20), peers: []peerResult{
			{pp: runs(80), tg: runs(32), ppRatio: runs(1.1, 1.12, 1.2), tgRatio: runs(1.25), rss: runs(800 << 20)},
			{tg: runs(44), tgRatio: runs(0.9, 0.91), rss: runs(900 << 20)},
		}}
	peers := []peer{llamaPeer("lb", nil, "d", ""), withIK[1]}
	r := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 3, threads: 2, bandwidth: 47, depths: []int{4096}, peers: peers}, rows: []row{base, deep}}
	md := r.markdown()
	t.Log(md)
	assert.Contains(t, md, "## At depth")
	assert.Contains(t, md, "llama.cpp: llama-bench `-d D`; ik_llama.cpp: llama-bench `-p D,D+P` (prefill at depth: the second prompt's extra time) and `-gp D,N` (decode)")
	assert.Contains(t, md, "| weights | depth | weft pp | llama.cpp pp | weft/llama.cpp | ik pp | weft/ik | weft tg | llama.cpp tg | weft/llama.cpp | ik tg | weft/ik | weft peak RSS MiB | llama.cpp peak RSS MiB | ik peak RSS MiB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	assert.Contains(t, md, "| Q4_0 | 4096 | 90.0 | 80.0 | 1.12× (1.10–1.20) | not run | – | 40.0 | 32.0 | 1.25× (1.25–1.25) | 44.0 | 0.91× (0.90–0.91) | 700 | 800 | 900 |")
	assert.Equal(t, 1, strings.Count(md, "| Q4_0 | 607 MiB |"), "the depth row stays out of the main table")
	// Two panels of one bar each (the base row's peers have no figures: dashes, not bars) and the
	// background and legend: the depth row is not drawn.
	assert.Equal(t, 2*1+4, strings.Count(r.svg(), "<rect"), "nor in the chart")
	r.rows = []row{base}
	assert.NotContains(t, r.markdown(), "At depth")
}

// TestChartRenders: the chart with three sides and a few rows is valid XML
// and, in headless Chromium where installed, shows every side's bars.
func TestChartRenders(t *testing.T) {
	var rows []row
	for i, typ := range []string{"q4_0", "q8_0", "f16", "bf16", "iq4_xs"} {
		f := float64(i + 1)
		rows = append(rows, row{bench: bench{shape: defaultShape, typ: typ}, bytes: 600 << 20, weftPP: stat{Median: 300 / f}, weftTG: stat{Median: 50 / f},
			peers: []peerResult{{pp: runs(100 / f), tg: runs(40 / f)}, {pp: runs(250 / f), tg: runs(55 / f)}}})
	}
	rows = append(rows, row{bench: bench{shape: "phi2", typ: "q4_0"}, bytes: 1500 << 20, weftPP: stat{Median: 90}, weftTG: stat{Median: 20},
		peers: []peerResult{{pp: runs(60), tg: runs(18)}, {pp: runs(80), tg: runs(21)}}})
	svg := report{cfg: config{peers: withIK}, rows: rows}.svg()
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the chart is not well-formed XML")
	}
	page := filepath.Join(t.TempDir(), "chart.svg")
	require.NoError(t, os.WriteFile(page, []byte(svg), 0o644))
	img := browsertest.Screenshot(t, page, 1400, 360)
	browsertest.RequireShown(t, img, 2000, browsertest.Engines...)
}

// TestWeftModeBench: f16-as-bf16 measures the F16 file, with the flag
// for weft only, and the report and chart say so.
func TestWeftModeBench(t *testing.T) {
	b, err := parseBenches("tinyllama-1.1b:f16-as-bf16,phi2:q4_0")
	require.NoError(t, err)
	require.Equal(t, []bench{{shape: defaultShape, typ: "f16", weftFlags: []string{"--f16-as-bf16"}}, {shape: "phi2", typ: "q4_0"}}, b)
	assert.Equal(t, "F16 --f16-as-bf16", b[0].title())
	assert.Equal(t, "f16 --f16-as-bf16", b[0].label())
	c := config{p: 512, n: 128, r: 2, threads: 2}
	assert.Equal(t, []string{"bench", "m.gguf", "-p", "512", "-n", "128", "-r", "2", "--threads", "2", "--json", "--bandwidth"}, weftArgs(c, "m.gguf", 0))
	r := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 2, threads: 2, bandwidth: 47}, rows: []row{{bench: b[0], bytes: 2200 << 20, weftPP: stat{Median: 100}, weftTG: stat{Median: 20}}}}
	assert.Contains(t, r.markdown(), "| F16 --f16-as-bf16 |")
	assert.Contains(t, r.svg(), ">--f16-as-bf16</text>")
	b, err = parseBenches("tinyllama-1.1b:q4_0+f32acc")
	require.NoError(t, err)
	require.Equal(t, []bench{{shape: defaultShape, typ: "q4_0", weftFlags: []string{"--flash-attn", "--flash-acc", "f32"}}}, b)
	assert.Equal(t, "Q4_0 --flash-attn --flash-acc f32", b[0].title())
}

// TestSVGMarksPeersNotRun: a peer without figures on a row gets a dash,
// not a bar labelled 0.
func TestSVGMarksPeersNotRun(t *testing.T) {
	peers := []peer{llamaPeer("lb", nil, "d", ""), withIK[1]}
	x := row{bench: bench{shape: defaultShape, typ: "f16"}, bytes: 2200 << 20, weftPP: stat{Median: 72}, weftTG: stat{Median: 9},
		peers: []peerResult{{}, {pp: runs(53), tg: runs(9.2)}}}
	svg := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 2, threads: 2, bandwidth: 47, peers: peers}, rows: []row{x}}.svg()
	assert.Contains(t, svg, ">–</text>")
	assert.NotContains(t, svg, ">0</text>")
}

// The hand-kept GPU section beside the report survives regeneration: it
// is appended after the generated part, and its absence changes nothing.
func TestKeptSections(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "benchmarks.md")
	md, err := withKeptSections("# Benchmarks\n\ngenerated\n", out)
	require.NoError(t, err)
	assert.Equal(t, "# Benchmarks\n\ngenerated\n", md)
	require.NoError(t, os.WriteFile(filepath.Join(dir, gpuSection), []byte("## GPU\n\nkept\n"), 0o644))
	md, err = withKeptSections("# Benchmarks\n\ngenerated\n", out)
	require.NoError(t, err)
	assert.Equal(t, "# Benchmarks\n\ngenerated\n\n## GPU\n\nkept\n", md)
	require.NoError(t, os.Remove(filepath.Join(dir, gpuSection)))
	require.NoError(t, os.Mkdir(filepath.Join(dir, gpuSection), 0o755))
	_, err = withKeptSections("x", out)
	assert.ErrorContains(t, err, "hand-kept section")
}

// docs/benchmarks.md ends with docs/benchmarks-gpu.md, as benchdoc writes
// it (edit the GPU figures there).
func TestCommittedReportKeepsGPUSection(t *testing.T) {
	root := testenv.RepoRoot(t)
	kept, err := os.ReadFile(filepath.Join(root, "docs", gpuSection))
	require.NoError(t, err)
	report, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(report), "\n\n"+string(kept)), "docs/benchmarks.md does not end with docs/%s", gpuSection)
}
