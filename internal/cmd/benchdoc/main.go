package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type config struct {
	bin, models, out            string
	llamaQuantize, llamaImatrix string // for the types graphc cannot write
	calibration                 string // text llama-imatrix reads
	benches                     []bench
	p, n, r, rounds, threads    int
	bandwidth                   float64 // GB/s, for the decode floor
	// depths adds rows measured with that many tokens already in the KV
	// cache (graphrun bench --depth); each peer is asked for the same its
	// own way (peer.depth, see peerDepthArgs).
	depths []int
	// weftDepthFlags are extra graphrun bench flags for the rows at depth
	// (--flash-attn, --kv-type T: the long-context settings the peers'
	// -fa 1 runs are compared with).
	weftDepthFlags []string
	// peers: llama.cpp (always; "not run" without -llama-bench), then
	// ik_llama.cpp when -ik-bench is given.
	peers []peer
}

// bench is one model measured: a graphc synth shape and a weight type,
// and the graphrun flags of weft's runs (the peers run the same file as
// they always do).
type bench struct {
	shape, typ string
	weftFlags  []string
}

// weftModes are the weight "types" of -benches that name a weft mode on
// another type's file: f16-as-bf16 is the F16 file run with
// --f16-as-bf16 (F16 weights computed as BF16, like ik_llama.cpp's -rtr
// repack), beside the peers' runs of that F16 file.
var weftModes = map[string]bench{
	"f16-as-bf16": {typ: "f16", weftFlags: []string{"--f16-as-bf16"}},
}

// f32AccSuffix on a -benches type (q4_0+f32acc) runs that type's file
// with flash attention's float32 accumulator (--flash-attn --flash-acc
// f32, ik_llama.cpp's numerics) on every row, beside the peers' -fa 1.
const f32AccSuffix = "+f32acc"

// label names a bench in the report: the weight type, prefixed with the
// shape's architecture for the shapes beside the TinyLlama one.
func (b bench) label() string {
	l := b.typ + strings.Join(append([]string{""}, b.weftFlags...), " ")
	if b.shape == defaultShape {
		return l
	}
	return b.shape + " " + l
}

const defaultShape = "tinyllama-1.1b"

// defaultBenches: the TinyLlama shape in seven weight types (IQ2_XXS made
// by llama.cpp's tools, see ensureModel), then a Qwen2.5-0.5B-shaped and a
// Phi-2-shaped model (see model/synth's presets) in Q4_0, to compare their
// share of llama.cpp with llama's.
const defaultBenches = "tinyllama-1.1b:q4_0,tinyllama-1.1b:q4_k_m,tinyllama-1.1b:q8_0,tinyllama-1.1b:f16," +
	"tinyllama-1.1b:bf16,tinyllama-1.1b:iq4_xs,tinyllama-1.1b:iq2_xxs,qwen2-0.5b:q4_0,phi2:q4_0"

// parseBenches reads a comma-separated list of SHAPE:TYPE.
func parseBenches(list string) ([]bench, error) {
	var out []bench
	for _, item := range strings.Split(list, ",") {
		shape, typ, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok || shape == "" || typ == "" {
			return nil, fmt.Errorf("bad -benches entry %q: want SHAPE:TYPE, e.g. phi2:q4_0", item)
		}
		b := bench{shape: shape, typ: typ}
		if m, ok := weftModes[typ]; ok {
			b.typ, b.weftFlags = m.typ, m.weftFlags
		}
		if t, ok := strings.CutSuffix(typ, f32AccSuffix); ok && t != "" {
			b.typ, b.weftFlags = t, []string{"--flash-attn", "--flash-acc", "f32"}
		}
		out = append(out, b)
	}
	return out, nil
}

func main() {
	c, err := parseFlags(flag.CommandLine, os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line (getenv supplies the defaults that
// come from the environment: LLAMA_BENCH, IK_BENCH, …).
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) (config, error) {
	var c config
	benches := fs.String("benches", defaultBenches, "models to measure, SHAPE:TYPE[,…] (graphc synth shapes and types; TYPE f16-as-bf16: the F16 file, weft with --f16-as-bf16; TYPE+f32acc: weft with --flash-attn --flash-acc f32)")
	fs.StringVar(&c.bin, "bin", "bin", "folder holding graphc and graphrun")
	fs.StringVar(&c.models, "models", "out/bench", "folder for the synthesised models")
	fs.StringVar(&c.out, "out", "docs/benchmarks.md", "markdown report (an .svg chart is written beside it)")
	llamaBench := fs.String("llama-bench", getenv("LLAMA_BENCH"), "path to llama.cpp's llama-bench (optional; env LLAMA_BENCH)")
	weftDepthFlags := fs.String("weft-depth-flags", "", "extra graphrun bench flags for the rows at depth, space-separated (e.g. \"--flash-attn\", beside the peers' -fa 1)")
	llamaFlags := fs.String("llama-flags", "", "extra flags for every llama.cpp llama-bench run, space-separated (e.g. \"-fa 1\")")
	llamaDepth := fs.String("llama-depth", "sweep", "how llama.cpp is measured at depth: sweep (weft-sweep-bench, built against its library by sweep/build-llama-sweep.sh: P tokens' prefill and N tokens' decode timed at depth D, one sample a round), d (its llama-bench's -d D, from b5600; not in c392e5094), gp (-gp D,N, decode only, as ik_llama.cpp's) or none")
	llamaSweep := fs.String("llama-sweep", "", "path to weft-sweep-bench for -llama-depth sweep (default: beside -llama-bench)")
	llamaSweepFlags := fs.String("llama-sweep-flags", llamaDefaultSweepFlags, "flags for every weft-sweep-bench run (-llama-depth sweep)")
	llamaBuild := fs.String("llama-build", getenv("LLAMA_BUILD"), "how that llama-bench was built, for the report (env LLAMA_BUILD; default: read from the CMakeCache.txt of its build folder)")
	ikBench := fs.String("ik-bench", getenv("IK_BENCH"), "path to ik_llama.cpp's llama-bench: adds its columns (optional; env IK_BENCH; build-ik.sh builds one)")
	ikFlags := fs.String("ik-flags", ikDefaultFlags, "flags for every ik_llama.cpp llama-bench run")
	ikDepth := fs.String("ik-depth", ikDefaultDepth, "how ik_llama.cpp is measured at depth: pp+gp (its llama-bench: prefill at depth D from prompts of D and D+P tokens, decode by -gp D,N), gp (decode only), sweep (its llama-sweep-bench, beside llama-bench unless -ik-sweep: P tokens' prefill and N tokens' decode timed at depth D, one sample a round) or none")
	ikSweep := fs.String("ik-sweep", "", "path to ik_llama.cpp's llama-sweep-bench for -ik-depth sweep (default: beside -ik-bench)")
	ikSweepFlags := fs.String("ik-sweep-flags", ikDefaultSweepFlags, "flags for every llama-sweep-bench run (-ik-depth sweep)")
	ikBuild := fs.String("ik-build", getenv("IK_BUILD"), "how that llama-bench was built, for the report (env IK_BUILD; default: read from the CMakeCache.txt of its build folder)")
	fs.StringVar(&c.llamaQuantize, "llama-quantize", getenv("LLAMA_QUANTIZE"), "llama.cpp's llama-quantize, for the importance-matrix types graphc cannot write (env LLAMA_QUANTIZE; default: beside llama-bench)")
	fs.StringVar(&c.llamaImatrix, "llama-imatrix", getenv("LLAMA_IMATRIX"), "llama.cpp's llama-imatrix (env LLAMA_IMATRIX; default: beside llama-bench)")
	fs.StringVar(&c.calibration, "calibration", "../shared/reference/prompts/p3-synth-15m.txt", "text llama-imatrix computes the importance matrix from")
	fs.IntVar(&c.p, "p", 512, "prompt tokens")
	fs.IntVar(&c.n, "n", 128, "generated tokens")
	fs.IntVar(&c.r, "r", 2, "repetitions per round")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds, each running weft and every peer once")
	fs.IntVar(&c.threads, "threads", 2, "threads")
	fs.Float64Var(&c.bandwidth, "bandwidth", 47, "memory bandwidth in GB/s for the decode floor (ANCHORS.md: 44-50 on the 2-core machine)")
	depths := fs.String("depths", "", "also measure with this many tokens already in the KV cache, D[,…] (graphrun bench --depth), e.g. 4096,16384")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q: every setting is a flag (-h lists them)", fs.Args())
	}
	if *llamaBench != "" {
		dir := filepath.Dir(*llamaBench)
		if c.llamaQuantize == "" {
			c.llamaQuantize = filepath.Join(dir, "llama-quantize")
		}
		if c.llamaImatrix == "" {
			c.llamaImatrix = filepath.Join(dir, "llama-imatrix")
		}
	}
	build := func(given, bin string) string {
		if given != "" {
			return given
		}
		return describeBuild(bin)
	}
	c.weftDepthFlags = strings.Fields(*weftDepthFlags)
	llama := llamaPeer(*llamaBench, strings.Fields(*llamaFlags), *llamaDepth, build(*llamaBuild, *llamaBench))
	deep := *depths != ""
	if err := llama.setSweep(deep, *llamaSweep, *llamaSweepFlags, "weft-sweep-bench", "internal/cmd/benchdoc/sweep/build-llama-sweep.sh builds it"); err != nil {
		return c, err
	}
	c.peers = []peer{llama}
	if *ikBench != "" {
		ik := ikPeer(*ikBench, strings.Fields(*ikFlags), *ikDepth, build(*ikBuild, *ikBench))
		if err := ik.setSweep(deep, *ikSweep, *ikSweepFlags, "llama-sweep-bench", "build-ik.sh builds it"); err != nil {
			return c, err
		}
		c.peers = append(c.peers, ik)
	}
	var err error
	if c.benches, err = parseBenches(*benches); err != nil {
		return c, err
	}
	if c.depths, err = parseDepths(*depths); err != nil {
		return c, err
	}
	if _, err := peerDepthArgs(*ikDepth, 1, c.p, c.n); err != nil {
		return c, fmt.Errorf("-ik-depth: %w", err)
	}
	if _, err := peerDepthArgs(*llamaDepth, 1, c.p, c.n); err != nil {
		return c, fmt.Errorf("-llama-depth: %w", err)
	}
	for _, p := range c.peers {
		if _, err := os.Stat(p.bin); p.bin != "" && err != nil {
			return c, fmt.Errorf("-%s-bench: %w", p.option, err)
		}
	}
	return c, nil
}

// chartPath is where the chart of the report at out goes: beside it, the
// same name with .svg.
func chartPath(out string) string {
	if out == "" {
		out = "benchmarks.md"
	}
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".svg"
}

// parseDepths reads -depths: a comma-separated list of positive token
// counts (empty: none).
func parseDepths(list string) ([]int, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []int
	for _, item := range strings.Split(list, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(item))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("bad -depths entry %q: want a positive number of tokens, e.g. 4096", item)
		}
		out = append(out, d)
	}
	return out, nil
}

func run(c config) error {
	if err := os.MkdirAll(c.models, 0o755); err != nil {
		return err
	}
	var rows []row
	for _, b := range c.benches {
		path := filepath.Join(c.models, b.shape+"-"+b.typ+".gguf")
		if err := ensureModel(c, path, b); err != nil {
			return err
		}
		for _, depth := range append([]int{0}, c.depths...) {
			r, err := measure(c, path, b, depth)
			if err != nil {
				return err
			}
			rows = append(rows, r)
		}
	}
	doc := report{when: time.Now().UTC(), cfg: c, rows: rows, env: rows[0].env}
	md, err := withKeptSections(doc.markdown(), c.out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.out, []byte(md), 0o644); err != nil {
		return err
	}
	svg := chartPath(c.out)
	if err := os.WriteFile(svg, []byte(doc.svg()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", c.out, svg)
	return nil
}
