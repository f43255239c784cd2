package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/runtime"
)

func init() {
	register(&command{
		name:    "dump",
		usage:   "MODEL.plan|MODEL.gguf [--format text|json|dot] [-o FILE]",
		summary: "print a plan's graph as text, JSON or Graphviz DOT",
		run:     runDump,
	})
}

func runDump(args []string) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	format := fs.String("format", "text", "text, json or dot")
	out := fs.String("o", "", "output file (default stdout)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("want one plan or model file, got %d arguments", len(pos))
	}
	p, err := loadAnyPlan(pos[0])
	if err != nil {
		return err
	}
	w := io.Writer(os.Stdout)
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	switch *format {
	case "text":
		return graph.WriteText(w, p.Graph)
	case "json":
		return graph.WriteJSON(w, p.Graph)
	case "dot":
		return graph.WriteDOT(w, p.Graph)
	}
	return fmt.Errorf("unknown format %q (want text, json or dot)", *format)
}

// loadAnyPlan reads a plan file or compiles a GGUF model in memory.
func loadAnyPlan(path string) (*runtime.Plan, error) {
	if strings.HasSuffix(strings.ToLower(path), ".gguf") {
		return runtime.Compile(path, runtime.CompileOptions{})
	}
	return runtime.ReadPlan(path)
}
