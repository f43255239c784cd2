package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weft-ml/weft/model/synth"
	"github.com/weft-ml/weft/runtime"
)

// stat is runtime.Stat, as graphrun bench's JSON carries it.
type stat = runtime.Stat

type env struct {
	CPU       string   `json:"cpu"`
	CPUFlags  []string `json:"cpu_flags"`
	Kernels   string   `json:"kernels"`
	Cores     int      `json:"cores"`
	GoVersion string   `json:"go_version"`
	Commit    string   `json:"commit"`
}

// row is one model's results, with depth tokens in the cache.
type row struct {
	bench          bench
	depth          int
	bytes          int64
	weftPP, weftTG stat
	peerPP, peerTG stat // llama.cpp; no runs when not run
	ppRatio        stat // per-round weft/llama.cpp ratios
	tgRatio        stat
	bandwidth      stat // memory read GB/s, measured in each round
	weftRSS        stat // peak RSS of each bench process, bytes
	peerRSS        stat
	env            env
}

func ensureModel(c config, path string, b bench) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if synth.NeedsImatrix(b.typ) {
		return quantizeWithLlama(c, path, b)
	}
	fmt.Fprintf(os.Stderr, "synthesising %s\n", path)
	cmd := exec.Command(filepath.Join(c.bin, "graphc"), "synth", "-o", path, "--shape", b.shape, "--type", b.typ)
	cmd.Stderr = os.Stderr
	return cmd.Run()
}

// quantizeWithLlama makes a model of a type graphc cannot write (the
// importance-matrix mixes, such as IQ2_XXS) the way users get one: the
// shape's F16 model (synthesised as for its own bench), an importance
// matrix from llama-imatrix over the calibration text, then llama-quantize.
func quantizeWithLlama(c config, path string, b bench) error {
	for _, tool := range []string{c.llamaQuantize, c.llamaImatrix} {
		if _, err := os.Stat(tool); tool == "" || err != nil {
			return fmt.Errorf("%s: graphc cannot write %s (it needs an importance matrix); give -llama-quantize and -llama-imatrix (or LLAMA_BENCH with them beside it)", path, b.typ)
		}
	}
	master := filepath.Join(c.models, b.shape+"-f16.gguf")
	if err := ensureModel(c, master, bench{b.shape, "f16"}); err != nil {
		return err
	}
	imatrix := filepath.Join(c.models, b.shape+".imatrix")
	if _, err := os.Stat(imatrix); err != nil {
		fmt.Fprintf(os.Stderr, "importance matrix %s\n", imatrix)
		cmd := exec.Command(c.llamaImatrix, "-m", master, "-f", c.calibration, "-o", imatrix,
			"-c", "64", "--chunks", "4", "-t", strconv.Itoa(c.threads))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("llama-imatrix: %v\n%s", err, out)
		}
	}
	fmt.Fprintf(os.Stderr, "quantizing %s with llama-quantize\n", path)
	cmd := exec.Command(c.llamaQuantize, "--imatrix", imatrix, master, path, strings.ToUpper(b.typ), strconv.Itoa(c.threads))
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(path)
		return fmt.Errorf("llama-quantize: %v\n%s", err, out)
	}
	return nil
}

// measure runs weft and llama.cpp on one model in rounds, each side once
// per round and in alternating order, so that both see the same drift of
// this shared machine's memory bandwidth. It summarises each side's runs
// over all rounds, and the ratios as medians of each round's paired
// ratio (weft's median over llama.cpp's), which cancels slow drift.
func measure(c config, path string, b bench, depth int) (row, error) {
	st, err := os.Stat(path)
	if err != nil {
		return row{}, err
	}
	r := row{bench: b, depth: depth, bytes: st.Size()}
	var weftPP, weftTG, peerPP, peerTG, bw, ppRatios, tgRatios, weftRSS, peerRSS []float64
	at := ""
	if depth > 0 {
		at = fmt.Sprintf(" at depth %d", depth)
	}
	for round := 1; round <= c.rounds; round++ {
		var w, p sample
		weft := func() error {
			fmt.Fprintf(os.Stderr, "round %d/%d, weft: %s%s\n", round, c.rounds, filepath.Base(path), at)
			var err error
			w, r.env, err = measureWeft(c, path, depth)
			return err
		}
		peer := func() error {
			if c.llamaBench == "" || depth > 0 && c.peerDepth == "none" {
				return nil
			}
			fmt.Fprintf(os.Stderr, "round %d/%d, llama.cpp: %s%s\n", round, c.rounds, filepath.Base(path), at)
			var err error
			p, err = measurePeer(c, path, depth)
			return err
		}
		order := []func() error{weft, peer}
		if round%2 == 0 {
			order[0], order[1] = peer, weft
		}
		for _, f := range order {
			if err := f(); err != nil {
				return r, err
			}
		}
		weftPP, weftTG, bw = append(weftPP, w.pp...), append(weftTG, w.tg...), append(bw, w.bw...)
		peerPP, peerTG = append(peerPP, p.pp...), append(peerTG, p.tg...)
		if w.rss > 0 {
			weftRSS = append(weftRSS, float64(w.rss))
		}
		if p.rss > 0 {
			peerRSS = append(peerRSS, float64(p.rss))
		}
		if len(w.pp) > 0 && len(p.pp) > 0 {
			ppRatios = append(ppRatios, median(w.pp)/median(p.pp))
		}
		if len(w.tg) > 0 && len(p.tg) > 0 {
			tgRatios = append(tgRatios, median(w.tg)/median(p.tg))
		}
	}
	r.weftPP, r.weftTG = summarize(weftPP), summarize(weftTG)
	r.peerPP, r.peerTG = summarize(peerPP), summarize(peerTG)
	r.ppRatio, r.tgRatio = summarize(ppRatios), summarize(tgRatios)
	r.bandwidth = summarize(bw)
	r.weftRSS, r.peerRSS = summarize(weftRSS), summarize(peerRSS)
	return r, nil
}

// sample is one bench call's runs: prefill and decode tokens/s and, for
// weft, the memory read bandwidth in GB/s; rss is the process's peak
// resident memory in bytes (0: not known).
type sample struct {
	pp, tg, bw []float64
	rss        int64
}

// median is the median of runs, which must not be empty.
func median(runs []float64) float64 { return runtime.SummarizeRuns(runs).Median }

func summarize(runs []float64) stat {
	if len(runs) == 0 {
		return stat{}
	}
	return *runtime.SummarizeRuns(runs)
}

// measureWeft returns one graphrun bench call's prefill, decode and
// memory-bandwidth runs.
func measureWeft(c config, path string, depth int) (s sample, e env, err error) {
	var rep struct {
		Prefill   stat  `json:"prefill_tok_s"`
		Decode    stat  `json:"decode_tok_s"`
		Bandwidth stat  `json:"read_gb_s"`
		Env       env   `json:"env"`
		PeakRSS   int64 `json:"peak_rss_bytes"`
	}
	if _, err := runJSON(filepath.Join(c.bin, "graphrun"), weftArgs(c, path, depth), &rep); err != nil {
		return s, e, err
	}
	return sample{rep.Prefill.Runs, rep.Decode.Runs, rep.Bandwidth.Runs, rep.PeakRSS}, rep.Env, nil
}

// weftArgs is the graphrun bench command line of one weft measurement.
func weftArgs(c config, path string, depth int) []string {
	args := []string{"bench", path, "-p", itoa(c.p), "-n", itoa(c.n), "-r", itoa(c.r), "--threads", itoa(c.threads), "--json"}
	if depth > 0 {
		return append(args, "--depth", itoa(depth))
	}
	return append(args, "--bandwidth")
}

// peerDepthArgs are the llama-bench flags of the tests at depth for a
// -peer-depth mode: prefill of p and decode of n tokens after depth
// tokens. llama.cpp's llama-bench learnt -d in 2025 (after c392e5094,
// whose only combined test, -pg, times prefill and decode together);
// ik_llama.cpp has no prefill at depth, and its -gp D,N times N decoded
// tokens after D (reported with n_prompt = D: measurePeer counts them as
// decode). Its -p and -n lists append to the defaults, hence -p 0 -n 0.
func peerDepthArgs(mode string, depth, p, n int) ([]string, error) {
	switch mode {
	case "d":
		return []string{"-p", itoa(p), "-n", itoa(n), "-d", itoa(depth)}, nil
	case "gp":
		return []string{"-p", "0", "-n", "0", "-gp", itoa(depth) + "," + itoa(n)}, nil
	case "none":
		return nil, nil
	}
	return nil, fmt.Errorf("-peer-depth %q: want d, gp or none", mode)
}

// peerArgs is the llama-bench command line of one peer measurement.
func peerArgs(c config, path string, depth int) ([]string, error) {
	args := []string{"-m", path, "-t", itoa(c.threads), "-r", itoa(c.r), "-o", "json"}
	args = append(args, c.peerFlags...)
	if depth == 0 {
		return append(args, "-p", itoa(c.p), "-n", itoa(c.n)), nil
	}
	extra, err := peerDepthArgs(c.peerDepth, depth, c.p, c.n)
	return append(args, extra...), err
}

// measurePeer returns one llama-bench call's prefill and decode runs in
// tokens/s (from its per-run nanoseconds).
func measurePeer(c config, path string, depth int) (s sample, err error) {
	var peer []struct {
		NPrompt int       `json:"n_prompt"`
		NGen    int       `json:"n_gen"`
		Samples []float64 `json:"samples_ns"`
	}
	args, err := peerArgs(c, path, depth)
	if err != nil {
		return s, err
	}
	if s.rss, err = runJSON(c.llamaBench, args, &peer); err != nil {
		return s, err
	}
	decodeOnly := depth > 0 && c.peerDepth == "gp"
	for _, p := range peer {
		for _, ns := range p.Samples {
			if p.NPrompt > 0 && !decodeOnly {
				s.pp = append(s.pp, float64(p.NPrompt)/ns*1e9)
			} else {
				s.tg = append(s.tg, float64(p.NGen)/ns*1e9)
			}
		}
	}
	return s, nil
}

// runJSON runs bin and decodes its standard output into v; it returns the
// process's peak resident memory in bytes (0 where not known).
func runJSON(bin string, args []string, v any) (int64, error) {
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s %v: %w", bin, args, err)
	}
	return peakRSS(cmd.ProcessState), json.Unmarshal(out.Bytes(), v)
}

func itoa(i int) string { return strconv.Itoa(i) }
