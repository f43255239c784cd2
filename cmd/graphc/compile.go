package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/weft-ml/weft/runtime"
)

func init() {
	register(&command{
		name:    "compile",
		usage:   "MODEL.gguf -o MODEL.plan [--ctx N] [--batch N] [--kv-type f16|f32]",
		summary: "lower a GGUF model to a static op graph and write a plan file",
		run:     runCompile,
	})
}

func runCompile(args []string) error {
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	out := fs.String("o", "", "output plan file (default: MODEL with .plan)")
	ctx := fs.Int("ctx", 0, "KV cache size in tokens (default: min(2048, training context))")
	batch := fs.Int("batch", 0, "largest prefill batch (default 512)")
	kv := fs.String("kv-type", "", "KV cache type f16|f32 (default f16)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("want one model file, got %d arguments", len(pos))
	}
	in := pos[0]
	if *out == "" {
		*out = strings.TrimSuffix(in, ".gguf") + ".plan"
	}
	start := time.Now()
	p, err := runtime.Compile(in, runtime.CompileOptions{Ctx: *ctx, Batch: *batch, KVType: *kv})
	if err != nil {
		return err
	}
	if err := runtime.WritePlan(*out, p); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "compiled %s -> %s: %d nodes, %d layers, ctx %d, batch %d, kv %s (%.0f ms)\n",
		in, *out, len(p.Graph.Nodes), p.Params.Layers, p.Run.Ctx, p.Run.Batch, p.Run.KVType, float64(time.Since(start).Microseconds())/1000)
	return nil
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("graphc compile m.gguf -o m.plan").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
