package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// stat mirrors runtime.Stat in graphrun bench's JSON.
type stat struct {
	Median float64   `json:"median"`
	P95    float64   `json:"p95"`
	CV     float64   `json:"cv"`
	Runs   []float64 `json:"runs"`
}

type env struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit"`
}

// row is one weight type's results.
type row struct {
	typ             string
	bytes           int64
	weftPP, weftTG  stat
	peerPP, peerTG  float64 // llama.cpp mean tok/s, 0 when not run
	peerPPs, peerTS float64 // llama.cpp stddev
	env             env
}

func ensureModel(c config, path, typ string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "synthesising %s\n", path)
	cmd := exec.Command(filepath.Join(c.bin, "graphc"), "synth", "-o", path, "--shape", "tinyllama-1.1b", "--type", typ)
	cmd.Stderr = os.Stderr
	return cmd.Run()
}

func measure(c config, path, typ string) (row, error) {
	st, err := os.Stat(path)
	if err != nil {
		return row{}, err
	}
	r := row{typ: typ, bytes: st.Size()}
	fmt.Fprintf(os.Stderr, "weft: %s\n", filepath.Base(path))
	var rep struct {
		Prefill stat `json:"prefill_tok_s"`
		Decode  stat `json:"decode_tok_s"`
		Env     env  `json:"env"`
	}
	args := []string{"bench", path, "-p", itoa(c.p), "-n", itoa(c.n), "-r", itoa(c.r), "--threads", itoa(c.threads), "--json"}
	if err := runJSON(filepath.Join(c.bin, "graphrun"), args, &rep); err != nil {
		return r, err
	}
	r.weftPP, r.weftTG, r.env = rep.Prefill, rep.Decode, rep.Env
	if c.llamaBench == "" {
		return r, nil
	}
	fmt.Fprintf(os.Stderr, "llama.cpp: %s\n", filepath.Base(path))
	var peer []struct {
		NPrompt int     `json:"n_prompt"`
		NGen    int     `json:"n_gen"`
		Avg     float64 `json:"avg_ts"`
		Stddev  float64 `json:"stddev_ts"`
	}
	args = []string{"-m", path, "-t", itoa(c.threads), "-p", itoa(c.p), "-n", itoa(c.n), "-r", itoa(c.r), "-o", "json"}
	if err := runJSON(c.llamaBench, args, &peer); err != nil {
		return r, err
	}
	for _, p := range peer {
		if p.NPrompt > 0 {
			r.peerPP, r.peerPPs = p.Avg, p.Stddev
		} else {
			r.peerTG, r.peerTS = p.Avg, p.Stddev
		}
	}
	return r, nil
}

func runJSON(bin string, args []string, v any) error {
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %v: %w", bin, args, err)
	}
	return json.Unmarshal(out.Bytes(), v)
}

func itoa(i int) string { return strconv.Itoa(i) }
