package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

type config struct {
	bin, models, out, llamaBench string
	types                        []string
	p, n, r, rounds, threads     int
	bandwidth                    float64 // GB/s, for the decode floor
}

func main() {
	c := config{types: []string{"q4_0", "q4_k_m", "q8_0", "f16"}}
	flag.StringVar(&c.bin, "bin", "bin", "folder holding graphc and graphrun")
	flag.StringVar(&c.models, "models", "out/bench", "folder for the synthesised models")
	flag.StringVar(&c.out, "out", "docs/benchmarks.md", "markdown report (an .svg chart is written beside it)")
	flag.StringVar(&c.llamaBench, "llama-bench", os.Getenv("LLAMA_BENCH"), "path to llama.cpp's llama-bench (optional; env LLAMA_BENCH)")
	flag.IntVar(&c.p, "p", 512, "prompt tokens")
	flag.IntVar(&c.n, "n", 128, "generated tokens")
	flag.IntVar(&c.r, "r", 2, "repetitions per round")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds, each running weft and llama.cpp once")
	flag.IntVar(&c.threads, "threads", 2, "threads")
	flag.Float64Var(&c.bandwidth, "bandwidth", 47, "memory bandwidth in GB/s for the decode floor (ANCHORS.md: 44-50 on the 2-core machine)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if err := os.MkdirAll(c.models, 0o755); err != nil {
		return err
	}
	var rows []row
	for _, t := range c.types {
		path := filepath.Join(c.models, "tinyllama-1.1b-"+t+".gguf")
		if err := ensureModel(c, path, t); err != nil {
			return err
		}
		r, err := measure(c, path, t)
		if err != nil {
			return err
		}
		rows = append(rows, r)
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
