package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/passes"
	"github.com/weft-ml/weft/runtime"
)

func init() {
	register(&command{
		name:    "dump",
		usage:   "MODEL.plan|MODEL.gguf [--format text|json|dot|html] [-o FILE] [--after PASS] [--passes a,b] [--disable x] [-O0]",
		summary: "print a plan's graph as text, JSON, Graphviz DOT or a self-contained HTML page",
		run:     runDump,
	})
}

func runDump(args []string) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	format := fs.String("format", "text", "text, json, dot or html")
	out := fs.String("o", "", "output file (default stdout)")
	after := fs.String("after", "", "show the graph after this pass (html: before and after it)")
	pf := addPassFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("want one plan or model file, got %d arguments", len(pos))
	}
	if !slices.Contains([]string{"text", "json", "dot", "html"}, *format) {
		return fmt.Errorf("unknown format %q (want text, json, dot or html)", *format)
	}
	o := runtime.CompileOptions{}
	pf.apply(&o)
	views, p, err := loadViews(pos[0], *after, *format == "html", o)
	if err != nil {
		return err
	}
	if *out == "" {
		return writeView(os.Stdout, *format, views, p, *after)
	}
	f, err := safefile.Create(*out, append(p.Files(), pos[0])...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := writeView(f, *format, views, p, *after); err != nil {
		return err
	}
	return f.Commit()
}

// writeView writes the last view (html: all of them) in format.
func writeView(w io.Writer, format string, views []graph.View, p *runtime.Plan, after string) error {
	g := views[len(views)-1].Graph
	switch format {
	case "text":
		if err := graph.WriteText(w, g); err != nil {
			return err
		}
		return writePassLog(w, passLog(p, after))
	case "json":
		return graph.WriteJSONWith(w, g, map[string]any{"passes": passLog(p, after)})
	case "dot":
		return graph.WriteDOT(w, g)
	}
	return graph.WriteHTML(w, views)
}

// loadViews returns the graphs to show: the plan's final graph, or with
// after (or for html) snapshots taken while recompiling the model.
func loadViews(path, after string, html bool, o runtime.CompileOptions) ([]graph.View, *runtime.Plan, error) {
	if after == "" && !html {
		p, err := loadAnyPlan(path, o)
		if err != nil {
			return nil, nil, err
		}
		return []graph.View{{Title: "plan", Graph: p.Graph}}, p, nil
	}
	if after != "" && after != "lowered" && !slices.Contains(passes.Names(), after) {
		if p, err := runtime.ReadPlan(path); err == nil && slices.ContainsFunc(p.Passes, func(e runtime.PassLogEntry) bool { return e.Name == after }) {
			return nil, nil, fmt.Errorf("pass %q is the compiling program's own (passes.Insertion): graphc cannot run it again; the plan's graph (no --after) is after all its passes, and the program can dump the graph after it (runtime.CompileOptions.DumpAfter)", after)
		}
		return nil, nil, fmt.Errorf("unknown pass %q for --after (passes: %v)", after, passes.Names())
	}
	var names []string
	var snaps []*graph.Graph
	o.DumpAfter = []string{"all"}
	o.Dump = func(pass string, g *graph.Graph) error {
		names, snaps = append(names, pass), append(snaps, g.Clone())
		return nil
	}
	p, err := compileSource(path, o)
	if err != nil {
		return nil, nil, err
	}
	i := len(names) - 1
	if after != "" {
		if i = slices.Index(names, after); i < 0 {
			return nil, nil, fmt.Errorf("pass %s did not run (ran: %v)", after, names)
		}
	}
	views := []graph.View{{Title: "after " + names[i], Graph: snaps[i]}}
	if i > 0 {
		views = append([]graph.View{{Title: "before " + names[i] + " (after " + names[i-1] + ")", Graph: snaps[i-1]}}, views...)
	}
	if after == "" && i > 0 {
		views[0] = graph.View{Title: "lowered", Graph: snaps[0]}
		views[1].Title = "after all passes"
	}
	return views, p, nil
}

// writePassLog ends a text dump with the passes that made the graph
// (built-in or the compiling program's own), one per line.
func writePassLog(w io.Writer, log []runtime.PassLogEntry) error {
	for _, e := range log {
		if _, err := fmt.Fprintf(w, "# pass %-14s %4d -> %4d nodes, %d changes\n", e.Name, e.NodesBefore, e.NodesAfter, e.Count); err != nil {
			return err
		}
	}
	return nil
}

// passLog is the plan's pass log, up to and including pass after.
func passLog(p *runtime.Plan, after string) []runtime.PassLogEntry {
	for i, e := range p.Passes {
		if e.Name == after {
			return p.Passes[:i+1]
		}
	}
	return p.Passes
}

// compileSource compiles a GGUF, or the model a plan was compiled from
// with the plan's run settings.
func compileSource(path string, o runtime.CompileOptions) (*runtime.Plan, error) {
	if !isGGUF(path) {
		p, err := runtime.ReadPlan(path)
		if err != nil {
			return nil, err
		}
		o.Ctx, o.Batch, o.KVType, o.Backend = p.Run.Ctx, p.Run.Batch, p.Run.KVType, p.DeviceBackend()
		o.FlashAttn = p.Run.FlashAttn
		if path = p.Model.AbsPath; path == "" {
			path = p.Model.Path
		}
	}
	return runtime.Compile(path, o)
}

func isGGUF(path string) bool { return strings.HasSuffix(strings.ToLower(path), ".gguf") }

// loadAnyPlan reads a plan file or compiles a GGUF model in memory.
func loadAnyPlan(path string, o runtime.CompileOptions) (*runtime.Plan, error) {
	if isGGUF(path) {
		return runtime.Compile(path, o)
	}
	return runtime.ReadPlan(path)
}
