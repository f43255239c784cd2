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
		usage:   "MODEL.plan|MODEL.gguf [--format text|json|dot|html] [-o FILE] [--after PASS] [--passes a,b] [--disable x] [-O0] [--profile P.json [--phase decode]]",
		summary: "print a plan's graph as text, JSON, Graphviz DOT or a self-contained HTML page",
		run:     runDump,
	})
}

func runDump(args []string) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	format := fs.String("format", "text", "text, json, dot or html")
	out := fs.String("o", "", "output file (default stdout)")
	after := fs.String("after", "", "show the graph after this pass (html: before and after it)")
	profile := fs.String("profile", "", "html: colour the graph after all passes by a profile's node times (graphrun bench --profile-out FILE)")
	phase := fs.String("phase", "", `the profile's phase to draw: "decode" (the default when there is one) or "prefill N"`)
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
	var prof *runtime.Profile
	var ph *runtime.ProfilePhase
	switch {
	case *profile == "" && *phase != "":
		return fmt.Errorf("--phase %q chooses a phase of --profile: give --profile FILE too", *phase)
	case *profile == "":
	case *format != "html":
		return fmt.Errorf("--profile colours the html drawing: add --format html (the profile itself is JSON already)")
	case *after != "":
		return fmt.Errorf("--profile colours the graph after all passes, which the profile's node IDs name: leave out --after")
	default:
		if prof, err = runtime.ReadProfile(*profile); err != nil {
			return err
		}
		if ph, err = prof.Phase(*phase); err != nil {
			return fmt.Errorf("%s: %w", *profile, err)
		}
		// Compile a GGUF as the profiled plan was, so the IDs match.
		c := prof.Compile
		o.Backend, o.Batch, o.Ctx, o.KVType, o.FlashAttn = c.Backend, c.Batch, c.Ctx, c.KVType, c.FlashAttn
	}
	views, p, err := loadViews(pos[0], *after, *format == "html", o)
	if err != nil {
		return err
	}
	if ph != nil {
		last := &views[len(views)-1]
		if last.Heat, err = profileHeat(prof, ph, last.Graph, *profile, os.Stderr); err != nil {
			return err
		}
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

// profileHeat matches a profile phase's nodes to g's and describes each
// for the drawing; it warns on w about profile nodes g lacks, and fails
// when none match.
func profileHeat(prof *runtime.Profile, ph *runtime.ProfilePhase, g *graph.Graph, path string, w io.Writer) (*graph.Heat, error) {
	found, missing := ph.Match(g)
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: none of the profile's %d nodes is in this graph (profiled: %s on %s, %d nodes, compiled with backend %q, batch %d, ctx %d; this graph: %d nodes): dump the model or plan the profile was taken of, with the same passes",
			path, len(ph.Nodes), prof.Model, prof.Backend, prof.GraphNodes, prof.Compile.Backend, prof.Compile.Batch, prof.Compile.Ctx, len(g.Nodes))
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "graphc dump: %d of the profile's %d nodes are not in this graph (e.g. %%%d %s %q): they are left out of the drawing\n",
			len(missing), len(ph.Nodes), missing[0].ID, missing[0].Op, missing[0].Name)
	}
	clock := map[string]string{"gpu": "GPU time", "wall": "wall time"}[ph.Clock]
	if clock == "" {
		clock = ph.Clock + " time"
	}
	title := fmt.Sprintf("%s, %s on %s: %.1f µs per token (%d-token steps, %.1f µs each)", ph.Name, clock, prof.Backend, ph.USPerToken, ph.Tokens, ph.US)
	if ph.Dispatches > 0 {
		title += fmt.Sprintf("; per step %.0f dispatches, %.0f barriers, %.0f submits", ph.Dispatches, ph.Barriers, ph.Submits)
	}
	heat := &graph.Heat{Title: title, Nodes: map[int]graph.HeatNode{}}
	for id, pn := range found {
		info := fmt.Sprintf("profile, %s: %.1f µs per step, %.1f%% of the step\n%.3g GB/s (%.3g MB read and written)", ph.Name, pn.US, 100*pn.Share, pn.GBs, float64(pn.Bytes)/1e6)
		if pn.FLOPs > 0 {
			info += fmt.Sprintf(", %.3g TFLOP/s", pn.TFLOPs)
		}
		info += "\nkind " + pn.Kind
		for _, part := range pn.Parts {
			info += fmt.Sprintf("\n  part %s: %.1f µs", part.Label, part.US)
		}
		heat.Nodes[id] = graph.HeatNode{Share: pn.Share, Label: fmt.Sprintf("%.1f µs  %.1f%%", pn.US, 100*pn.Share), Info: info}
	}
	return heat, nil
}
