package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/runtime"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: peertable [-svg FILE] DIR... (results of .ci/device-peers.sh)")
		flag.PrintDefaults()
	}
	svg := flag.String("svg", "", "also draw the figures as an SVG chart in FILE")
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Args(), *svg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peertable:", err)
		os.Exit(1)
	}
}

// rates is one engine's prefill and decode tok/s in one round.
type rates struct{ pp, tg float64 }

// pick is the prefill ("pp") or decode ("tg") rate.
func (r rates) pick(phase string) float64 {
	if phase == "pp" {
		return r.pp
	}
	return r.tg
}

func median(v []float64) float64 { return runtime.SummarizeRuns(v).Median }

// valid: both rates were read, positive and finite.
func (r rates) valid() bool {
	ok := func(v float64) bool { return v > 0 && !math.IsInf(v, 1) }
	return ok(r.pp) && ok(r.tg)
}

// round is one type's paired measurement in one round.
type round struct {
	peer, typ  string
	weft, them rates
	gpu        string // as llama-bench names it
}

// peerNames are the peers .ci/device-peers.sh builds.
var peerNames = map[string]string{"llama": "llama.cpp", "ik": "ik_llama.cpp"}

// typeOrder orders the rows; other types follow by name.
var typeOrder = []string{"q4_0", "q4_k_m", "q8_0", "f16"}

var peerFile = regexp.MustCompile(`^(llama|ik)-([a-z0-9_]+)-r([0-9]+)\.json$`)

// run writes the tables of the results in dirs to out, and the chart to
// the file svg where it is not "".
func run(dirs []string, svg string, out, stderr io.Writer) error {
	var rounds []round
	for _, dir := range dirs {
		rs, err := readDir(dir, stderr)
		if err != nil {
			return err
		}
		rounds = append(rounds, rs...)
	}
	if len(rounds) == 0 {
		return errors.New("no round with both weft's and a peer's results in " + strings.Join(dirs, ", "))
	}
	writeTable(out, rounds)
	if svg == "" {
		return nil
	}
	var chart strings.Builder
	writeChart(&chart, rounds)
	return safefile.WriteFile(svg, []byte(chart.String()))
}

// readDir pairs every peer result in dir with weft's of the same type and
// round.
func readDir(dir string, stderr io.Writer) ([]round, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var rounds []round
	for _, e := range entries {
		m := peerFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		them, gpu, err := readPeer(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		stem := filepath.Join(dir, "weft-"+m[2]+"-r"+m[3])
		weft, err := readWeft(stem)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "peertable: %s has no weft result beside it (%s.json or .txt): left out\n", filepath.Join(dir, e.Name()), stem)
			continue
		}
		if err != nil {
			return nil, err
		}
		rounds = append(rounds, round{peer: m[1], typ: m[2], weft: weft, them: them, gpu: gpu})
	}
	return rounds, nil
}

// readPeer reads llama-bench's JSON: the prompt test and the generation
// test, each the median of its samples, and the GPU it names.
func readPeer(path string) (rates, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return rates{}, "", err
	}
	var tests []struct {
		NPrompt int       `json:"n_prompt"`
		NGen    int       `json:"n_gen"`
		Samples []float64 `json:"samples_ts"`
		GPU     string    `json:"gpu_info"`
	}
	if err := json.Unmarshal(data, &tests); err != nil {
		return rates{}, "", fmt.Errorf("%s: not llama-bench's JSON: %w", path, err)
	}
	var r rates
	gpu := ""
	for _, t := range tests {
		if len(t.Samples) == 0 {
			return rates{}, "", fmt.Errorf("%s: a test without samples_ts", path)
		}
		gpu = cmp.Or(gpu, t.GPU)
		med := runtime.SummarizeRuns(t.Samples).Median
		switch {
		case t.NPrompt > 0 && t.NGen == 0:
			r.pp = med
		case t.NGen > 0 && t.NPrompt == 0:
			r.tg = med
		}
	}
	if !r.valid() {
		return rates{}, "", fmt.Errorf("%s: want one prompt test and one generation test, at positive rates", path)
	}
	return r, gpu, nil
}

// readWeft reads graphrun bench's report, stem.json or else stem.txt.
func readWeft(stem string) (rates, error) {
	if data, err := os.ReadFile(stem + ".json"); err == nil {
		var rep struct {
			Prefill *runtime.Stat `json:"prefill_tok_s"`
			Decode  *runtime.Stat `json:"decode_tok_s"`
		}
		if err := json.Unmarshal(data, &rep); err != nil || rep.Prefill == nil || rep.Decode == nil || !(rates{rep.Prefill.Median, rep.Decode.Median}).valid() {
			return rates{}, fmt.Errorf("%s.json: not graphrun bench --json's report with prefill and decode at positive rates", stem)
		}
		return rates{rep.Prefill.Median, rep.Decode.Median}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return rates{}, err
	}
	data, err := os.ReadFile(stem + ".txt")
	if err != nil {
		return rates{}, err
	}
	var r rates
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		switch {
		case err != nil:
		case strings.HasPrefix(f[0], "pp"):
			r.pp = v
		case strings.HasPrefix(f[0], "tg"):
			r.tg = v
		}
	}
	if !r.valid() {
		return rates{}, fmt.Errorf("%s.txt: no pp and tg rows of graphrun bench's table at positive rates", stem)
	}
	return r, nil
}

// writeTable writes one table per peer: a row per type.
func writeTable(w io.Writer, rounds []round) {
	for _, p := range peersOf(rounds) {
		name := peerNames[p]
		fmt.Fprintf(w, "Beside %s (`-fa 1`); tok/s medians, ranges over rounds; ratios are each round's weft ÷ %s, then their median:\n\n", name, name)
		fmt.Fprintf(w, "| weights | rounds | weft pp | %s pp | pp ratio | weft tg | %s tg | tg ratio |\n|---|---:|---:|---:|---|---:|---:|---|\n", name, name)
		for _, typ := range typesOf(rounds, p) {
			wp, tp, rp := pairs(rounds, p, typ, "pp")
			wt, tt, rt := pairs(rounds, p, typ, "tg")
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", strings.ToUpper(typ), len(wp),
				span(wp, "%.0f"), span(tp, "%.0f"), ratios(rp), span(wt, "%.1f"), span(tt, "%.1f"), ratios(rt))
		}
		fmt.Fprintln(w)
	}
}

// pairs returns, over the rounds of one peer and type, weft's rates in
// phase ("pp" or "tg"), the peer's, and each round's ratio of the two.
func pairs(rounds []round, peer, typ, phase string) (weft, them, ratio []float64) {
	for _, r := range rounds {
		if r.peer == peer && r.typ == typ {
			w, p := r.weft.pick(phase), r.them.pick(phase)
			weft, them, ratio = append(weft, w), append(them, p), append(ratio, w/p)
		}
	}
	return weft, them, ratio
}

func typesOf(rounds []round, peer string) []string {
	var types []string
	for _, r := range rounds {
		if r.peer == peer && !slices.Contains(types, r.typ) {
			types = append(types, r.typ)
		}
	}
	slices.SortFunc(types, func(a, b string) int {
		ia, ib := slices.Index(typeOrder, a), slices.Index(typeOrder, b)
		if ia < 0 {
			ia = len(typeOrder)
		}
		if ib < 0 {
			ib = len(typeOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	return types
}

// span is "lo–hi" (or one value) in format f.
func span(v []float64, f string) string {
	lo, hi := slices.Min(v), slices.Max(v)
	if fmt.Sprintf(f, lo) == fmt.Sprintf(f, hi) {
		return fmt.Sprintf(f, lo)
	}
	return fmt.Sprintf(f+"–"+f, lo, hi)
}

// ratios is "median× (lo–hi)", marked ⚠ where some round is below 1.0×.
func ratios(v []float64) string {
	s := fmt.Sprintf("%.2f× (%s)", median(v), span(v, "%.2f"))
	if slices.Min(v) < 1 {
		s += " ⚠"
	}
	return s
}
