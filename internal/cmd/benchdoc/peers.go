package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// peer is an engine measured beside weft through its llama-bench: mainline
// llama.cpp's or ik_llama.cpp's, which share the command line and the JSON
// output. Each has its own columns, its own bars in the chart and its own
// targets (ANCHORS.md for llama.cpp, issue 20 for ik_llama.cpp).
type peer struct {
	name   string   // in the text and the chart's legend
	short  string   // in column headers
	option string   // its benchdoc flags' prefix: -OPTION-bench, -OPTION-flags, -OPTION-build
	bin    string   // its llama-bench; "" when not given (its columns read "not run")
	flags  []string // extra flags for every run (ik_llama.cpp: -rtr 1 -fa 1)
	depth  string   // how it measures at depth: d, gp, pp+gp, sweep or none (peerDepthArgs)
	// sweep and sweepFlags: the program timing prefill and decode at
	// depth, and its flags, for the depth mode "sweep" (measureSweep):
	// ik_llama.cpp's llama-sweep-bench, or for mainline llama.cpp (no
	// such tool at c392e5094) weft-sweep-bench, our program against its
	// library that takes the same command line (sweep/).
	sweep      string
	sweepFlags []string
	build      string // how it was built, for the report ("" when not known)
	colour     string // its bars in the chart

	ppTarget, tgTarget float64 // the weft/peer ratios asked for
}

// peerResult is one peer's figures in a row.
type peerResult struct {
	pp, tg           stat
	ppRatio, tgRatio stat   // per-round weft/peer ratios
	rss              stat   // peak RSS of each llama-bench process, bytes
	commit           string // llama-bench's build_commit
	err              string // why it failed on this row ("" when it ran)
}

// Defaults of the two peers. ik_llama.cpp runs with its run-time repack
// (every quantized tensor re-laid out at load) and flash attention, its
// fastest CPU settings; its llama-bench has no prefill-at-depth test, only
// -gp, so by default its prefill at depth comes from two prompts (pp+gp);
// "sweep" times it directly with its llama-sweep-bench (the same settings,
// spelled for that tool's command line).
const (
	ikDefaultFlags         = "-rtr 1 -fa 1"
	ikDefaultDepth         = "pp+gp"
	ikDefaultSweepFlags    = "-rtr -fa 1"
	llamaDefaultSweepFlags = "-fa 1"
)

// setSweep gives the peer its sweep program when it measures at depth
// (deep: rows at depth were asked for) in the sweep mode: path, or the
// program called name beside its llama-bench (hint says how to build it).
func (p *peer) setSweep(deep bool, path, flags, name, hint string) error {
	if !deep || p.depth != "sweep" || p.bin == "" {
		return nil
	}
	p.sweep, p.sweepFlags = path, strings.Fields(flags)
	if p.sweep == "" {
		p.sweep = filepath.Join(filepath.Dir(p.bin), name)
	}
	if _, err := os.Stat(p.sweep); err != nil {
		return fmt.Errorf("-%s-sweep: %w (%s)", p.option, err, hint)
	}
	return nil
}

func llamaPeer(bin string, flags []string, depth, build string) peer {
	return peer{name: "llama.cpp", short: "llama.cpp", option: "llama", bin: bin, flags: flags, depth: depth, build: build,
		colour: "#bdbdbd", ppTarget: prefillRatioTarget, tgTarget: decodeRatioTarget}
}

func ikPeer(bin string, flags []string, depth, build string) peer {
	return peer{name: "ik_llama.cpp", short: "ik", option: "ik", bin: bin, flags: flags, depth: depth, build: build,
		colour: "#e6550d", ppTarget: ikPrefillRatioTarget, tgTarget: ikDecodeRatioTarget}
}

// runsAt reports whether the peer is measured at this depth.
func (p peer) runsAt(depth int) bool {
	return p.bin != "" && !(depth > 0 && p.depth == "none")
}

// describeBuild says how the llama-bench at bin was built, read from the
// CMakeCache.txt of its build folder (bin's folder or the one above, as
// cmake's bin/ layout has it): the build type and GGML_NATIVE, the flags
// issue 20 fixes. "" when there is none (e.g. a Makefile build): then
// -llama-build / -ik-build must say it.
func describeBuild(bin string) string {
	if bin == "" {
		return ""
	}
	dir := filepath.Dir(bin)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		f, err := os.Open(filepath.Join(d, "CMakeCache.txt"))
		if err != nil {
			continue
		}
		defer f.Close()
		var flags []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			key, val, ok := strings.Cut(sc.Text(), "=")
			name, _, _ := strings.Cut(key, ":")
			if ok && (name == "CMAKE_BUILD_TYPE" || name == "GGML_NATIVE") {
				flags = append(flags, "-D"+name+"="+val)
			}
		}
		if sc.Err() != nil || len(flags) == 0 {
			return ""
		}
		return "cmake " + strings.Join(flags, " ")
	}
	return ""
}

// commitOf is the peer's build commit as its llama-bench reported it in
// the first row it ran.
func (r report) commitOf(i int) string {
	for _, x := range r.rows {
		if i < len(x.peers) && x.peers[i].commit != "" {
			return x.peers[i].commit
		}
	}
	return ""
}

// peersText says, per peer, its commit, how it was built and the command
// line it ran with (a row on an empty cache; the depth table names its
// depth flags).
func (r report) peersText(b *strings.Builder) {
	for i, p := range r.cfg.peers {
		if p.bin == "" {
			fmt.Fprintf(b, "%s: not run (give -%s-bench). ", p.name, p.option)
			continue
		}
		commit := r.commitOf(i)
		if commit == "" || commit == "unknown" {
			commit = "unknown"
		}
		build := p.build
		if build == "" {
			build = "not known"
		}
		args, _ := peerArgs(r.cfg, p, "FILE", 0)
		fmt.Fprintf(b, "%s: commit `%s`, built with `%s`, run as `llama-bench %s`. ", p.name, commit, build, strings.Join(args, " "))
	}
}

// failures lists the rows a peer could not run, with the reason.
func (r report) failures(b *strings.Builder) {
	for _, x := range r.rows {
		for i, pr := range x.peers {
			if pr.err == "" {
				continue
			}
			at := ""
			if x.depth > 0 {
				at = fmt.Sprintf(" at depth %d", x.depth)
			}
			fmt.Fprintf(b, "\n%s failed on %s%s: %s\n", r.cfg.peers[i].name, x.bench.title(), at, pr.err)
		}
	}
}
