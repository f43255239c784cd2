package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/runtime"
)

func init() {
	register(&command{
		name: "compile",
		usage: "MODEL.gguf -o MODEL.plan [--ctx N] [--batch N] [--kv-type f16|f32] [--backend cpu|vulkan] [--passes a,b] [--disable x] [-O0]\n" +
			"             [--dump-after PASS|all --dump-dir D]",
		summary: "lower a GGUF model to a static op graph, optimise it and write a plan file",
		run:     runCompile,
	})
}

// passFlags are the pass-selection flags shared by compile and dump.
type passFlags struct {
	passes, disable *string
	o0              *bool
}

func addPassFlags(fs *flag.FlagSet) passFlags {
	return passFlags{
		passes:  fs.String("passes", "", "comma-separated passes to run, in order (default: all)"),
		disable: fs.String("disable", "", "comma-separated passes to leave out"),
		o0:      fs.Bool("O0", false, "no optimisation (placement only)"),
	}
}

func (p passFlags) apply(o *runtime.CompileOptions) {
	o.Passes, o.Disable, o.O0 = splitList(*p.passes), splitList(*p.disable), *p.o0
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func runCompile(args []string) error {
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	out := fs.String("o", "", "output plan file (default: MODEL with .plan)")
	ctx := fs.Int("ctx", 0, "KV cache size in tokens (default: min(2048, training context))")
	batch := fs.Int("batch", 0, "largest prefill batch (default 512)")
	kv := fs.String("kv-type", "", "KV cache type f16|f32|q8_0|q4_0 (default f16; q8_0 and q4_0 need --flash-attn)")
	flash := fs.Bool("flash-attn", false, "sessions use flash attention, as llama.cpp's -fa (default off)")
	flashAcc := fs.String("flash-acc", "", runtime.FlashAccUsage)
	backend := fs.String("backend", "cpu", "preferred backend for placement: cpu or vulkan (nodes it cannot run stay on the cpu)")
	pf := addPassFlags(fs)
	dumpAfter := fs.String("dump-after", "", "write the graph after PASS (comma-separated, or all) as JSON")
	dumpDir := fs.String("dump-dir", ".", "folder for --dump-after files")
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
	o := runtime.CompileOptions{Ctx: *ctx, Batch: *batch, KVType: *kv, Backend: *backend, FlashAttn: *flash, FlashAcc: *flashAcc}
	pf.apply(&o)
	if *dumpAfter != "" {
		if err := os.MkdirAll(*dumpDir, 0o755); err != nil {
			return err
		}
		o.DumpAfter, o.Dump = splitList(*dumpAfter), dumpToDir(*dumpDir, in, *out)
	}
	start := time.Now()
	p, err := runtime.CompileTo(in, *out, o)
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Fprintf(os.Stderr, "compiled %s -> %s: %d nodes, %d layers, ctx %d, batch %d, kv %s (%.0f ms)\n",
		in, *out, len(p.Graph.Nodes), p.Params.Layers, p.Run.Ctx, p.Run.Batch, p.Run.KVType, float64(time.Since(start).Microseconds())/1000)
	reportPasses(p)
	return nil
}

// dumpToDir writes each dumped graph as DIR/NN-PASS.json, never over one
// of inputs.
func dumpToDir(dir string, inputs ...string) func(string, *graph.Graph) error {
	n := 0
	return func(pass string, g *graph.Graph) error {
		f, err := safefile.Create(filepath.Join(dir, fmt.Sprintf("%02d-%s.json", n, pass)), inputs...)
		if err != nil {
			return err
		}
		n++
		defer f.Abort()
		if err := graph.WriteJSON(f, g); err != nil {
			return err
		}
		return f.Commit()
	}
}

// reportPasses prints node counts, fusions and activation memory.
func reportPasses(p *runtime.Plan) {
	fmt.Fprintf(os.Stderr, "nodes: %d lowered, %d after passes\n", p.Lowered, len(p.Graph.Nodes))
	for _, e := range p.Passes {
		fmt.Fprintf(os.Stderr, "  %-14s %4d -> %4d nodes, %d changes\n", e.Name, e.NodesBefore, e.NodesAfter, e.Count)
	}
	fused := map[string]int{}
	for _, n := range p.Graph.Nodes {
		if ops.IsFused(n.Op) {
			fused[n.Op]++
		}
	}
	names := make([]string, 0, len(fused))
	for op, c := range fused {
		names = append(names, fmt.Sprintf("%s×%d", op, c))
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "fusions: %s\n", strings.Join(names, ", "))
	if m := p.Graph.Memory; m != nil {
		for b, size := range m.Arenas {
			fmt.Fprintf(os.Stderr, "peak activation memory: %s arena %.2f MiB for %d tokens (naive sum %.2f MiB, %.1f× less)\n",
				b, mib(size), m.Tokens, mib(m.Naive), float64(m.Naive)/float64(max(size, 1)))
		}
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

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
