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
	bin, models, out, llamaBench string
	llamaQuantize, llamaImatrix  string // for the types graphc cannot write
	calibration                  string // text llama-imatrix reads
	benches                      []bench
	p, n, r, rounds, threads     int
	bandwidth                    float64 // GB/s, for the decode floor
	// depths adds rows measured with that many tokens already in the KV
	// cache (graphrun bench --depth); peerDepth is how llama-bench is
	// asked for the same (see peerDepthArgs), peerFlags extra llama-bench
	// flags for every run (e.g. "-fa 1").
	depths    []int
	peerDepth string
	peerFlags []string
}

// bench is one model measured: a graphc synth shape and a weight type.
type bench struct{ shape, typ string }

// label names a bench in the report: the weight type, prefixed with the
// shape's architecture for the shapes beside the TinyLlama one.
func (b bench) label() string {
	if b.shape == defaultShape {
		return b.typ
	}
	return b.shape + " " + b.typ
}

const defaultShape = "tinyllama-1.1b"

// defaultBenches: the TinyLlama shape in six weight types (IQ2_XXS made
// by llama.cpp's tools, see ensureModel), then a Qwen2.5-0.5B-shaped and a
// Phi-2-shaped model (see model/synth's presets) in Q4_0, to compare their
// share of llama.cpp with llama's.
const defaultBenches = "tinyllama-1.1b:q4_0,tinyllama-1.1b:q4_k_m,tinyllama-1.1b:q8_0,tinyllama-1.1b:f16," +
	"tinyllama-1.1b:iq4_xs,tinyllama-1.1b:iq2_xxs,qwen2-0.5b:q4_0,phi2:q4_0"

// parseBenches reads a comma-separated list of SHAPE:TYPE.
func parseBenches(list string) ([]bench, error) {
	var out []bench
	for _, item := range strings.Split(list, ",") {
		shape, typ, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok || shape == "" || typ == "" {
			return nil, fmt.Errorf("bad -benches entry %q: want SHAPE:TYPE, e.g. phi2:q4_0", item)
		}
		out = append(out, bench{shape, typ})
	}
	return out, nil
}

func main() {
	var c config
	benches := flag.String("benches", defaultBenches, "models to measure, SHAPE:TYPE[,…] (graphc synth shapes and types)")
	flag.StringVar(&c.bin, "bin", "bin", "folder holding graphc and graphrun")
	flag.StringVar(&c.models, "models", "out/bench", "folder for the synthesised models")
	flag.StringVar(&c.out, "out", "docs/benchmarks.md", "markdown report (an .svg chart is written beside it)")
	flag.StringVar(&c.llamaBench, "llama-bench", os.Getenv("LLAMA_BENCH"), "path to llama.cpp's llama-bench (optional; env LLAMA_BENCH)")
	flag.StringVar(&c.llamaQuantize, "llama-quantize", os.Getenv("LLAMA_QUANTIZE"), "llama.cpp's llama-quantize, for the importance-matrix types graphc cannot write (env LLAMA_QUANTIZE; default: beside llama-bench)")
	flag.StringVar(&c.llamaImatrix, "llama-imatrix", os.Getenv("LLAMA_IMATRIX"), "llama.cpp's llama-imatrix (env LLAMA_IMATRIX; default: beside llama-bench)")
	flag.StringVar(&c.calibration, "calibration", "../shared/reference/prompts/p3-synth-15m.txt", "text llama-imatrix computes the importance matrix from")
	flag.IntVar(&c.p, "p", 512, "prompt tokens")
	flag.IntVar(&c.n, "n", 128, "generated tokens")
	flag.IntVar(&c.r, "r", 2, "repetitions per round")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds, each running weft and llama.cpp once")
	flag.IntVar(&c.threads, "threads", 2, "threads")
	flag.Float64Var(&c.bandwidth, "bandwidth", 47, "memory bandwidth in GB/s for the decode floor (ANCHORS.md: 44-50 on the 2-core machine)")
	depths := flag.String("depths", "", "also measure with this many tokens already in the KV cache, D[,…] (graphrun bench --depth), e.g. 4096,16384")
	flag.StringVar(&c.peerDepth, "peer-depth", "d", "how llama-bench measures at depth: d (llama.cpp's -d D, from b5600; not in c392e5094), gp (ik_llama.cpp's -gp D,N: decode only) or none")
	peerFlags := flag.String("peer-flags", "", "extra llama-bench flags for every run, space-separated (e.g. \"-fa 1\", ik_llama.cpp's \"-rtr 1 -fa 1\")")
	flag.Parse()
	c.peerFlags = strings.Fields(*peerFlags)
	if c.llamaBench != "" {
		dir := filepath.Dir(c.llamaBench)
		if c.llamaQuantize == "" {
			c.llamaQuantize = filepath.Join(dir, "llama-quantize")
		}
		if c.llamaImatrix == "" {
			c.llamaImatrix = filepath.Join(dir, "llama-imatrix")
		}
	}
	var err error
	if c.benches, err = parseBenches(*benches); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(2)
	}
	if c.depths, err = parseDepths(*depths); err == nil {
		_, err = peerDepthArgs(c.peerDepth, 1, c.p, c.n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
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
	if err := os.WriteFile(c.out, []byte(doc.markdown()), 0o644); err != nil {
		return err
	}
	svg := c.out[:len(c.out)-len(filepath.Ext(c.out))] + ".svg"
	if err := os.WriteFile(svg, []byte(doc.svg()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", c.out, svg)
	return nil
}
