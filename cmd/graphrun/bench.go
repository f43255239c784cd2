package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/runtime"
)

// benchReport is what `graphrun bench --json` prints.
type benchReport struct {
	Model        string `json:"model"`
	Backend      string `json:"backend"`
	Device       string `json:"device,omitempty"` // the backend's device, where it has one (a GPU)
	Threads      int    `json:"threads"`
	PromptTokens int    `json:"prompt_tokens"`
	GenTokens    int    `json:"gen_tokens"`
	Depth        int    `json:"depth"` // tokens in the KV cache before each run (--depth)
	Reps         int    `json:"reps"`
	FlashAttn    bool   `json:"flash_attn,omitempty"`
	FlashAcc     string `json:"flash_acc,omitempty"` // --flash-acc ("": f16, llama.cpp's)
	KVType       string `json:"kv_type,omitempty"`   // "" is the plan's (f16 by default)
	// F16AsBF16: --f16-as-bf16 converted this many F16 weights to BF16.
	F16AsBF16 int           `json:"f16_as_bf16,omitempty"`
	Prefill   *runtime.Stat `json:"prefill_tok_s,omitempty"`
	Decode    *runtime.Stat `json:"decode_tok_s,omitempty"`
	// ReadBandwidth is the memory streaming rate measured in the same
	// process (GB/s, --bandwidth): decode's ceiling at that moment.
	ReadBandwidth *runtime.Stat `json:"read_gb_s,omitempty"`
	// ReadBandwidthOf says whose memory: "vulkan: NVIDIA H200" (a GPU's
	// own, read by one of its kernels: the device the model ran on) or
	// "host, N threads".
	ReadBandwidthOf string   `json:"read_gb_s_of,omitempty"`
	Env             benchEnv `json:"env"`
	ModelBytes      int64    `json:"model_bytes"`
	PeakRSS         int64    `json:"peak_rss_bytes"` // of the whole process, mapped weights included
	// Cancelled: a signal stopped the benchmark; the statistics cover the
	// runs that completed before it.
	Cancelled bool `json:"cancelled,omitempty"`
	// Profile is --profile's per-node profile of the timed runs.
	Profile *runtime.Profile `json:"profile,omitempty"`
}

type benchEnv struct {
	CPU       string   `json:"cpu"`
	CPUFlags  []string `json:"cpu_flags"` // the extensions kernel selection looks at
	Kernels   string   `json:"kernels"`   // the SIMD variant in use (simd.Variant)
	Cores     int      `json:"cores"`
	GoVersion string   `json:"go_version"`
	Commit    string   `json:"commit"`
	Date      string   `json:"date"`
}

// runBench runs `graphrun bench`. When ctx is cancelled (a signal) it
// stops between runs or decoded tokens and prints what it measured.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("graphrun bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	p := fs.Int("p", 512, "prompt tokens for the prefill test (0: skip)")
	n := fs.Int("n", 128, "tokens for the decode test (0: skip)")
	r := fs.Int("r", 5, "repetitions (after one warm-up)")
	depth := fs.Int("depth", 0, "tokens already in the KV cache when each prefill and decode run starts (llama-bench's -d)")
	fs.IntVar(depth, "d", 0, "short for --depth")
	threads := fs.Int("threads", 0, "threads (default: all cores)")
	where := addBackendFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the timed runs to this file")
	bandwidth := fs.Bool("bandwidth", false, "also measure the memory read bandwidth (GB/s) decode runs against: the GPU's own memory with --backend vulkan, else the host's with the same threads")
	flashAttn := fs.Bool("flash-attn", false, "flash attention, as llama-bench's -fa 1")
	flashAcc := fs.String("flash-acc", "", runtime.FlashAccUsage)
	kvType := fs.String("kv-type", "", "KV cache type f16|f32|q8_0|q4_0, as llama-bench's -ctk/-ctv (q8_0 and q4_0 need --flash-attn)")
	nodeProfile := fs.Bool("profile", false, "time every node of the timed runs (Vulkan: GPU timestamps; CPU: wall time) and print time, share, GB/s and TFLOP/s by kind and the top nodes (with --json: in the object)")
	profileOut := fs.String("profile-out", "", "write the per-node profile as JSON to this file (implies --profile; graphc dump --format html --profile FILE draws it)")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return errUsage
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: graphrun bench MODEL.plan|MODEL.gguf [-p 512] [-n 128] [-r 5] [--depth N] [--threads N] [--backend cpu|vulkan|auto] [--device N] [--f16-as-bf16] [--flash-attn] [--flash-acc f16|f32] [--kv-type T] [--bandwidth] [--json] [--cpuprofile F] [--profile] [--profile-out F.json]")
		return errUsage
	}
	if *depth < 0 || *p < 0 || *n < 0 {
		return fmt.Errorf("-p %d, -n %d, --depth %d: want 0 or more tokens", *p, *n, *depth)
	}
	profiling := *nodeProfile || *profileOut != ""
	if profiling && *p == 0 && *n == 0 {
		return errors.New("--profile: -p 0 and -n 0 time no step: give -p or -n")
	}
	var profFile *safefile.Pending
	if *profileOut != "" {
		// Refuse a bad path before loading the model and benchmarking.
		var err error
		if profFile, err = safefile.Create(*profileOut, pos[0]); err != nil {
			return fmt.Errorf("--profile-out: %w", err)
		}
		defer profFile.Abort()
	}
	batch := max(*p, 1)
	m, err := openModel(ctx, pos[0], where.options(runtime.Options{Threads: *threads, Compile: runtime.CompileOptions{Batch: batch, Ctx: *depth + max(*p, *n) + 1}}, stderr))
	if errors.Is(err, errLoadCancelled) {
		fmt.Fprintln(stderr, "graphrun bench: stopped while loading the model: nothing measured")
		return nil
	}
	if err != nil {
		return err
	}
	defer m.Close()
	noteBackend(stderr, m)
	if *p > m.Plan.Run.Batch {
		return fmt.Errorf("-p %d exceeds the plan's batch size %d: recompile with --batch %d", *p, m.Plan.Run.Batch, *p)
	}
	if *profile != "" {
		stop, err := startProfile(*profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	res, err := m.BenchContext(ctx, runtime.BenchOptions{PromptTokens: *p, GenTokens: *n, Reps: *r, Depth: *depth, KVType: *kvType, FlashAttn: *flashAttn, FlashAcc: *flashAcc, Profile: profiling, Progress: func(stage string, rep, reps int) {
		if stage == "depth" {
			fmt.Fprintf(stderr, "filling the cache to depth %d\n", *depth)
			return
		}
		fmt.Fprintf(stderr, "\r%s: run %d/%d (run 0 is warm-up)   ", stage, rep, reps)
	}})
	fmt.Fprintln(stderr)
	cancelled := err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
	if err != nil && !cancelled {
		return err
	}
	if res == nil {
		res = &runtime.BenchResult{}
	}
	rep := benchReport{Model: filepath.Base(pos[0]), Backend: m.Backend, Device: m.Device.String(), Threads: *threads, PromptTokens: *p, GenTokens: *n, Reps: *r, Depth: *depth, FlashAttn: *flashAttn, FlashAcc: *flashAcc, KVType: *kvType, F16AsBF16: m.ConvertedBF16,
		Prefill: res.Prefill, Decode: res.Decode, Env: environment(), ModelBytes: m.File.Size(), PeakRSS: peakRSS(), Cancelled: cancelled}
	if rep.Threads == 0 {
		rep.Threads = goruntime.GOMAXPROCS(0)
	}
	if *bandwidth && !cancelled {
		if rep.ReadBandwidth, rep.ReadBandwidthOf, err = measureBandwidth(m.Backend, *where.device, m.Device.Name, rep.Threads, *r, stderr); err != nil {
			return err
		}
	}
	if res.Profile != nil && profFile != nil {
		if err := res.Profile.WriteJSON(profFile); err != nil {
			return err
		}
		if err := profFile.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote the profile to %s (draw it: graphc dump %s --format html --profile %s -o graph.html)\n", *profileOut, pos[0], *profileOut)
	}
	if *asJSON {
		if *nodeProfile {
			rep.Profile = res.Profile
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(rep)
	}
	printBench(stdout, rep)
	if cancelled {
		fmt.Fprintln(stdout, "cancelled: the statistics cover the runs completed before the signal")
	}
	if *nodeProfile && res.Profile != nil {
		return res.Profile.WriteText(stdout, 20)
	}
	return nil
}

func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func printBench(w io.Writer, r benchReport) {
	if r.Device != "" {
		fmt.Fprintf(w, "backend %s on %s\n", r.Backend, r.Device)
	}
	fmt.Fprintf(w, "model %s, %d threads, %s (%s; kernels %s), %s, commit %s\n", r.Model, r.Threads, r.Env.CPU, strings.Join(r.Env.CPUFlags, " "), r.Env.Kernels, r.Env.GoVersion, r.Env.Commit)
	fmt.Fprintf(w, "%-16s %10s %10s %8s %s\n", "test", "median", "p95", "cv", "runs (tok/s)")
	row := func(name string, s *runtime.Stat) {
		if s == nil {
			return
		}
		runs := make([]string, len(s.Runs))
		for i, x := range s.Runs {
			runs[i] = fmt.Sprintf("%.2f", x)
		}
		fmt.Fprintf(w, "%-16s %10.2f %10.2f %7.1f%% %s\n", name, s.Median, s.P95, 100*s.CV, strings.Join(runs, " "))
	}
	at := ""
	if r.Depth > 0 {
		at = fmt.Sprintf(" @ d%d", r.Depth) // llama-bench's label
	}
	if r.FlashAttn {
		at += " fa"
	}
	if r.FlashAcc == "f32" {
		at += " f32acc"
	}
	if r.KVType != "" {
		at += " kv " + r.KVType
	}
	if r.F16AsBF16 > 0 {
		at += " f16→bf16"
	}
	row(fmt.Sprintf("pp%d%s", r.PromptTokens, at), r.Prefill)
	row(fmt.Sprintf("tg%d%s", r.GenTokens, at), r.Decode)
	if b := r.ReadBandwidth; b != nil {
		fmt.Fprintf(w, "%-16s %10.2f %10.2f %7.1f%% (GB/s, memory read: %s)\n", "bandwidth", b.Median, b.P95, 100*b.CV, r.ReadBandwidthOf)
		if r.Decode != nil {
			fmt.Fprintf(w, "decode streams the file at %.1f GB/s, %.0f%% of that\n", r.Decode.Median*float64(r.ModelBytes)/1e9, 100*r.Decode.Median*float64(r.ModelBytes)/1e9/b.Median)
		}
	}
	if r.PeakRSS > 0 {
		fmt.Fprintf(w, "peak RSS %.0f MiB (model file %.0f MiB)\n", float64(r.PeakRSS)/(1<<20), float64(r.ModelBytes)/(1<<20))
	}
}

func environment() benchEnv {
	return benchEnv{CPU: cpuModel(), CPUFlags: simd.CPUFeatures(), Kernels: simd.Variant(), Cores: goruntime.NumCPU(), GoVersion: goruntime.Version(), Commit: commit(), Date: time.Now().UTC().Format(time.RFC3339)}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return goruntime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return goruntime.GOARCH
}

// commit reports the build's VCS revision, or the checkout's when built
// without VCS stamping.
func commit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value[:min(12, len(s.Value))]
			}
		}
	}
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
