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
	bandwidth      stat         // memory read GB/s, measured in each round
	weftRSS        stat         // peak RSS of each bench process, bytes
	peers          []peerResult // as config.peers; no runs where not run
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
	if err := ensureModel(c, master, bench{shape: b.shape, typ: "f16"}); err != nil {
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

// measure runs weft and the peers on one model in rounds, each once per
// round and in rotating order (roundOrder), so that all see the same drift
// of this shared machine's memory bandwidth. It summarises each side's
// runs over all rounds, and the ratios as medians of each round's paired
// ratio (weft's median over the peer's), which cancels slow drift. A peer
// that fails on a model (a weight type it cannot run) is noted in its
// result and left out of the later rounds; weft failing is an error.
func measure(c config, path string, b bench, depth int) (row, error) {
	st, err := os.Stat(path)
	if err != nil {
		return row{}, err
	}
	r := row{bench: b, depth: depth, bytes: st.Size(), peers: make([]peerResult, len(c.peers))}
	var weftPP, weftTG, bw, weftRSS []float64
	acc := make([]peerRuns, len(c.peers))
	at := ""
	if depth > 0 {
		at = fmt.Sprintf(" at depth %d", depth)
	}
	for round := 1; round <= c.rounds; round++ {
		var w sample
		ps := make([]sample, len(c.peers))
		steps := []func() error{func() error {
			fmt.Fprintf(os.Stderr, "round %d/%d, weft: %s%s\n", round, c.rounds, filepath.Base(path), at)
			var err error
			w, r.env, err = measureWeft(c, path, b.weftFlags, depth)
			return err
		}}
		for i, p := range c.peers {
			if !p.runsAt(depth) || r.peers[i].err != "" {
				continue
			}
			steps = append(steps, func() error {
				fmt.Fprintf(os.Stderr, "round %d/%d, %s: %s%s\n", round, c.rounds, p.name, filepath.Base(path), at)
				s, err := measurePeer(c, p, path, depth)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s failed, left out of this row: %v\n", p.name, err)
					r.peers[i].err = firstLine(err.Error())
					return nil
				}
				ps[i] = s
				r.peers[i].commit = s.commit
				return nil
			})
		}
		for _, k := range roundOrder(len(steps), round) {
			if err := steps[k](); err != nil {
				return r, err
			}
		}
		weftPP, weftTG, bw = append(weftPP, w.pp...), append(weftTG, w.tg...), append(bw, w.bw...)
		if w.rss > 0 {
			weftRSS = append(weftRSS, float64(w.rss))
		}
		for i := range c.peers {
			acc[i].add(w, ps[i])
		}
	}
	r.weftPP, r.weftTG = summarize(weftPP), summarize(weftTG)
	r.bandwidth = summarize(bw)
	r.weftRSS = summarize(weftRSS)
	for i := range c.peers {
		acc[i].summarize(&r.peers[i])
	}
	return r, nil
}

// roundOrder is the order of n steps (weft, then the peers) in a round
// counted from 1: rotated by one each round, so that each takes every
// place in turn (with one peer: weft first in odd rounds, second in even).
func roundOrder(n, round int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = (k + round - 1) % n
	}
	return out
}

// peerRuns gathers a peer's runs over the rounds of a row.
type peerRuns struct{ pp, tg, ppRatio, tgRatio, rss []float64 }

// add takes one round: weft's sample w and the peer's p.
func (a *peerRuns) add(w, p sample) {
	a.pp, a.tg = append(a.pp, p.pp...), append(a.tg, p.tg...)
	if p.rss > 0 {
		a.rss = append(a.rss, float64(p.rss))
	}
	if len(w.pp) > 0 && len(p.pp) > 0 {
		a.ppRatio = append(a.ppRatio, median(w.pp)/median(p.pp))
	}
	if len(w.tg) > 0 && len(p.tg) > 0 {
		a.tgRatio = append(a.tgRatio, median(w.tg)/median(p.tg))
	}
}

func (a *peerRuns) summarize(r *peerResult) {
	r.pp, r.tg = summarize(a.pp), summarize(a.tg)
	r.ppRatio, r.tgRatio = summarize(a.ppRatio), summarize(a.tgRatio)
	r.rss = summarize(a.rss)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// sample is one bench call's runs: prefill and decode tokens/s and, for
// weft, the memory read bandwidth in GB/s; rss is the process's peak
// resident memory in bytes (0: not known); commit a peer's build_commit.
type sample struct {
	pp, tg, bw []float64
	rss        int64
	commit     string
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
func measureWeft(c config, path string, flags []string, depth int) (s sample, e env, err error) {
	var rep struct {
		Prefill   stat  `json:"prefill_tok_s"`
		Decode    stat  `json:"decode_tok_s"`
		Bandwidth stat  `json:"read_gb_s"`
		Env       env   `json:"env"`
		PeakRSS   int64 `json:"peak_rss_bytes"`
	}
	if _, err := runJSON(filepath.Join(c.bin, "graphrun"), append(weftArgs(c, path, depth), flags...), &rep); err != nil {
		return s, e, err
	}
	return sample{pp: rep.Prefill.Runs, tg: rep.Decode.Runs, bw: rep.Bandwidth.Runs, rss: rep.PeakRSS}, rep.Env, nil
}

// weftArgs is the graphrun bench command line of one weft measurement.
func weftArgs(c config, path string, depth int) []string {
	args := []string{"bench", path, "-p", itoa(c.p), "-n", itoa(c.n), "-r", itoa(c.r), "--threads", itoa(c.threads), "--json"}
	if depth > 0 {
		return append(append(args, "--depth", itoa(depth)), c.weftDepthFlags...)
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
// pp+gp adds prompts of D and D+p tokens: llama-bench runs a prompt in
// batches of 512 from an empty cache, so with D and p multiples of 512
// the second prompt's extra time is exactly p tokens' prefill at depth D
// (peerRatesAtDepth).
func peerDepthArgs(mode string, depth, p, n int) ([]string, error) {
	switch mode {
	case "d":
		return []string{"-p", itoa(p), "-n", itoa(n), "-d", itoa(depth)}, nil
	case "gp":
		return []string{"-p", "0", "-n", "0", "-gp", itoa(depth) + "," + itoa(n)}, nil
	case "pp+gp":
		return []string{"-p", itoa(depth) + "," + itoa(depth+p), "-n", "0", "-gp", itoa(depth) + "," + itoa(n)}, nil
	case "none", "sweep": // sweep: measureSweep, not llama-bench
		return nil, nil
	}
	return nil, fmt.Errorf("depth mode %q: want d, gp, pp+gp, sweep or none", mode)
}

// peerArgs is the llama-bench command line of one peer measurement.
func peerArgs(c config, p peer, path string, depth int) ([]string, error) {
	args := []string{"-m", path, "-t", itoa(c.threads), "-r", itoa(c.r), "-o", "json"}
	args = append(args, p.flags...)
	if depth == 0 {
		return append(args, "-p", itoa(c.p), "-n", itoa(c.n)), nil
	}
	extra, err := peerDepthArgs(p.depth, depth, c.p, c.n)
	return append(args, extra...), err
}

// peerTest is one test of llama-bench's JSON output.
type peerTest struct {
	Commit  string    `json:"build_commit"`
	NPrompt int       `json:"n_prompt"`
	NGen    int       `json:"n_gen"`
	Samples []float64 `json:"samples_ns"`
}

// measurePeer returns one llama-bench call's prefill and decode runs in
// tokens/s (from its per-run nanoseconds).
func measurePeer(c config, p peer, path string, depth int) (s sample, err error) {
	if depth > 0 && p.depth == "sweep" {
		return measureSweep(c, p, path, depth)
	}
	var tests []peerTest
	args, err := peerArgs(c, p, path, depth)
	if err != nil {
		return s, err
	}
	if s.rss, err = runJSON(p.bin, args, &tests); err != nil {
		return s, err
	}
	if depth > 0 && p.depth == "pp+gp" {
		s.pp, s.tg, s.commit = peerRatesAtDepth(tests, depth, c.p)
		return s, nil
	}
	s.pp, s.tg, s.commit = peerRates(tests, depth > 0 && p.depth == "gp")
	return s, nil
}

// sweepArgs is the llama-sweep-bench command line that times p tokens'
// prefill and n tokens' decode with depth tokens in the cache: a context
// of depth+p in ubatches of p, measured only at the first and the last
// step (--sweep-stride depth/p), so the depth is filled untimed once.
func sweepArgs(c config, p peer, path string, depth int) ([]string, error) {
	if depth%c.p != 0 {
		return nil, fmt.Errorf("depth %d: the sweep mode needs a multiple of -p %d", depth, c.p)
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	args := []string{"-m", path, "-t", itoa(c.threads), "-c", itoa(depth + c.p), "-b", itoa(c.p), "-ub", itoa(c.p),
		"-n", itoa(c.n), "--sweep-stride", itoa(depth / c.p), "--output-format", "jsonl"}
	return append(args, p.sweepFlags...), nil
}

// sweepRow is one measured step of llama-sweep-bench's JSONL output.
type sweepRow struct {
	NKV     int     `json:"n_kv"`
	SpeedPP float64 `json:"speed_pp"`
	SpeedTG float64 `json:"speed_tg"`
}

// measureSweep times prefill and decode at depth with ik_llama.cpp's
// llama-sweep-bench: one run, one sample of each (its row at n_kv =
// depth), since every run fills the cache again.
func measureSweep(c config, p peer, path string, depth int) (s sample, err error) {
	args, err := sweepArgs(c, p, path, depth)
	if err != nil {
		return s, err
	}
	// It writes llama.log into its working directory: give it a scratch one
	// (and the model by absolute path), not the checkout benchdoc runs in.
	dir, err := os.MkdirTemp("", "benchdoc-sweep")
	if err != nil {
		return s, err
	}
	defer os.RemoveAll(dir)
	var out bytes.Buffer
	cmd := exec.Command(p.sweep, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out // it logs its rows to both, with its load messages
	if err := cmd.Run(); err != nil {
		os.Stderr.Write(out.Bytes())
		return s, fmt.Errorf("%s %v: %w", p.sweep, args, err)
	}
	s.rss = peakRSS(cmd.ProcessState)
	row, err := sweepRowAt(out.Bytes(), depth)
	if err != nil {
		return s, fmt.Errorf("%s: %w", p.sweep, err)
	}
	s.pp, s.tg = []float64{row.SpeedPP}, []float64{row.SpeedTG}
	return s, nil
}

// sweepRowAt finds the JSONL row of n_kv = depth in llama-sweep-bench's
// output.
func sweepRowAt(out []byte, depth int) (sweepRow, error) {
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if !bytes.HasPrefix(line, []byte("{")) || !bytes.Contains(line, []byte(`"speed_pp"`)) {
			continue
		}
		var r sweepRow
		if json.Unmarshal(line, &r) == nil && r.NKV == depth && r.SpeedPP > 0 && r.SpeedTG > 0 {
			return r, nil
		}
	}
	return sweepRow{}, fmt.Errorf("no row for n_kv = %d in its output", depth)
}

// peerRatesAtDepth turns a pp+gp call's tests into prefill at depth and
// decode tokens/s: the i-th run of the prompt of depth+p tokens less the
// i-th of the prompt of depth tokens is p tokens' prefill at depth (runs
// where the difference is not positive are dropped); -gp tests (n_gen >
// 0) are decode.
func peerRatesAtDepth(tests []peerTest, depth, p int) (pp, tg []float64, commit string) {
	var short, long []float64
	for _, t := range tests {
		if t.Commit != "" {
			commit = t.Commit
		}
		switch {
		case t.NGen > 0:
			for _, ns := range t.Samples {
				tg = append(tg, float64(t.NGen)/ns*1e9)
			}
		case t.NPrompt == depth:
			short = t.Samples
		case t.NPrompt == depth+p:
			long = t.Samples
		}
	}
	for i := range min(len(short), len(long)) {
		if d := long[i] - short[i]; d > 0 {
			pp = append(pp, float64(p)/d*1e9)
		}
	}
	return pp, tg, commit
}

// peerRates turns llama-bench's tests into prefill and decode tokens/s.
// decodeOnly: the tests are -gp D,N ones, whose n_prompt is the depth
// (untimed), not a prefill.
func peerRates(tests []peerTest, decodeOnly bool) (pp, tg []float64, commit string) {
	for _, t := range tests {
		commit = t.Commit
		for _, ns := range t.Samples {
			if t.NPrompt > 0 && !decodeOnly {
				pp = append(pp, float64(t.NPrompt)/ns*1e9)
			} else {
				tg = append(tg, float64(t.NGen)/ns*1e9)
			}
		}
	}
	return pp, tg, commit
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
