package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model/synth"
)

func stories(t *testing.T) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf")
}

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestGreedyMatchesReference(t *testing.T) {
	out, summary, err := runCLI(t, stories(t), "--prompt", "Once upon a time", "-n", "64", "--temp", "0", "--ignore-eos")
	if err != nil {
		t.Fatal(err)
	}
	want := ", there was a little girl named Lily. She loved to play outside in the park."
	if !strings.HasPrefix(out, want) {
		t.Errorf("stdout %q, want prefix %q", out, want)
	}
	if !strings.Contains(summary, "prompt 5 tokens") || !strings.Contains(summary, "generated 64 tokens") {
		t.Errorf("summary %q", summary)
	}
}

func TestJSONAndLogitsOut(t *testing.T) {
	logits := filepath.Join(t.TempDir(), "l.f32")
	out, _, err := runCLI(t, stories(t), "--prompt", "Once upon a time", "-n", "4", "--temp", "0", "--json", "--logits-out", logits)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		PromptTokens []int32 `json:"prompt_tokens"`
		Tokens       []int32 `json:"tokens"`
		Text         string  `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if len(res.PromptTokens) != 5 || len(res.Tokens) != 4 || res.Text == "" {
		t.Fatalf("json %+v", res)
	}
	raw, err := os.ReadFile(logits)
	if err != nil || len(raw) != 5*512*4 {
		t.Fatalf("logits file: %d bytes, err %v", len(raw), err)
	}
	last := raw[4*512*4:]
	best := 0
	for i := 0; i < 512; i++ {
		if f(last, i) > f(last, best) {
			best = i
		}
	}
	if int32(best) != res.Tokens[0] {
		t.Errorf("argmax of the last logits row %d, first token %d", best, res.Tokens[0])
	}
}

func f(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }

func TestSeedRepeats(t *testing.T) {
	a, _, err1 := runCLI(t, stories(t), "--prompt", "Once", "-n", "24", "--seed", "3")
	b, _, err2 := runCLI(t, stories(t), "--prompt", "Once", "-n", "24", "--seed", "3")
	if err1 != nil || err2 != nil || a != b {
		t.Fatalf("seeded runs differ: %q / %q (%v, %v)", a, b, err1, err2)
	}
}

func TestClearErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"/nonexistent/model.plan"}, "no such file"},
		{[]string{stories(t), "--prompt", "", "--no-bos"}, "empty prompt"},
		{[]string{stories(t), "--prompt", strings.Repeat("Once upon a time ", 40), "--ctx", "32"}, "context full"},
		{[]string{stories(t), "--kv-type", "q3"}, "KV cache type"},
		{[]string{stories(t), "--top-p", "2"}, "top"},
	}
	for _, c := range cases {
		_, _, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.want)) {
			t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
		}
	}
}

func TestBenchJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runBench(context.Background(), []string{stories(t), "-p", "16", "-n", "4", "-r", "2", "--bandwidth", "--json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Prefill struct {
			Median float64   `json:"median"`
			Runs   []float64 `json:"runs"`
		} `json:"prefill_tok_s"`
		Decode struct {
			Median float64 `json:"median"`
		} `json:"decode_tok_s"`
		Bandwidth struct {
			Median float64   `json:"median"`
			Runs   []float64 `json:"runs"`
		} `json:"read_gb_s"`
		BandwidthOf string `json:"read_gb_s_of"`
		Model       string `json:"model"`
		Threads     int    `json:"threads"`
		Env         struct {
			Kernels string `json:"kernels"`
		} `json:"env"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.Prefill.Median <= 0 || len(rep.Prefill.Runs) != 2 || rep.Decode.Median <= 0 || rep.Model != "stories260K.gguf" || rep.Threads < 1 ||
		rep.Bandwidth.Median <= 0 || len(rep.Bandwidth.Runs) != 2 || rep.Env.Kernels == "" || !strings.HasPrefix(rep.BandwidthOf, "host, ") {
		t.Fatalf("report %+v", rep)
	}
}

// On a GPU backend --bandwidth measures the device's own memory, with its
// kernel, not the host's: the report says whose.
func TestBenchBandwidthOfTheDevice(t *testing.T) {
	b, err := backends.Lookup("vulkan")
	require.NoError(t, err)
	if devs, err := b.(backends.DeviceLister).Devices(); err != nil || len(devs) == 0 {
		t.Skipf("skipping: no Vulkan device (%v)", err)
	}
	var out, errOut bytes.Buffer
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "2", "--backend", "vulkan", "--bandwidth"}, &out, &errOut), errOut.String())
	// Whose: the model's device, by name (WEFT_VULKAN_DEVICE may have
	// picked another index than 0).
	dev := regexp.MustCompile(`(?m)^backend vulkan on (.+), [^,:]+: `).FindStringSubmatch(out.String())
	require.Len(t, dev, 2, out.String())
	assert.Contains(t, errOut.String(), "measuring the memory read bandwidth of vulkan: "+dev[1]+"\n")
	assert.Regexp(t, `(?m)^bandwidth +[0-9.]+ +[0-9.]+ +[0-9.]+% \(GB/s, memory read: vulkan: `+regexp.QuoteMeta(dev[1])+`\)$`, out.String())
	assert.Contains(t, out.String(), "decode streams the file at")
	// The report names the device, and does not on the host.
	assert.Regexp(t, `(?m)^backend vulkan on .+: Vulkan 1\.`, out.String())
	out.Reset()
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1", "--backend", "vulkan", "--json"}, &out, &errOut))
	var rep struct {
		Device string `json:"device"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	assert.NotEmpty(t, rep.Device)
	out.Reset()
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1"}, &out, &errOut))
	assert.NotContains(t, out.String(), "backend ")
}

// TestContextShiftMatchesLlamaCpp: --keep -1 keeps the whole prompt (BOS
// included) and shifts as llama-cli does; the greedy text through two
// shifts of a 64-token context is llama.cpp's (testdata/shift).
func TestContextShiftMatchesLlamaCpp(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "shift", "reference", "stories260K.p1.c64k5.json"))
	require.NoError(t, err)
	var ref struct {
		GreedyText string `json:"greedy_text"`
		NKeep      int    `json:"n_keep"`
	}
	require.NoError(t, json.Unmarshal(raw, &ref))
	require.Equal(t, 5, ref.NKeep)
	out, summary, err := runCLI(t, stories(t), "--prompt", "Once upon a time", "-n", "100", "--temp", "0", "--ignore-eos", "--ctx", "64", "--keep", "-1")
	require.NoError(t, err)
	require.Equal(t, ref.GreedyText+"\n", out)
	require.Contains(t, summary, "context shifts: 2")
	_, _, err = runCLI(t, stories(t), "--prompt", "Once upon a time", "-n", "100", "--temp", "0", "--ignore-eos", "--ctx", "64")
	require.ErrorContains(t, err, "context full", "without --context-shift a full context stops the run")
	_, _, err = runCLI(t, stories(t), "--prompt", "Once", "--keep", "-2")
	require.ErrorContains(t, err, "--keep -2")
}

func TestKeepTokens(t *testing.T) {
	p := []int32{1, 10, 11, 12}
	assert.Equal(t, 1, keepTokens(0, p, true, 64, 0), "--keep 0 keeps BOS")
	assert.Equal(t, 0, keepTokens(0, p[1:], false, 64, 0), "no BOS, nothing kept")
	assert.Equal(t, 3, keepTokens(2, p, true, 64, 0))
	assert.Equal(t, 4, keepTokens(-1, p, true, 64, 0), "-1: the whole prompt, BOS included")
	assert.Equal(t, 4, keepTokens(9, p, true, 64, 0), "more than the prompt: the whole prompt")
	assert.Equal(t, 4, keepTokens(-1, append(p, p...), true, 8, 0), "capped at the context less 4")
	assert.Equal(t, 3, keepTokens(2, p, true, 0, 2048), "the plan's context")
}

// TestBenchDepth: --depth fills the cache first and labels the tests as
// llama-bench does; the JSON carries the depth and the peak RSS.
func TestBenchDepth(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "16", "-n", "4", "-r", "1", "--depth", "64"}, &out, &errOut))
	assert.Contains(t, out.String(), "pp16 @ d64")
	assert.Contains(t, out.String(), "tg4 @ d64")
	assert.Contains(t, out.String(), "peak RSS")
	assert.Contains(t, errOut.String(), "filling the cache to depth 64")
	out.Reset()
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "16", "-n", "4", "-r", "1", "-d", "32", "--json"}, &out, &errOut))
	var rep struct {
		Depth   int   `json:"depth"`
		PeakRSS int64 `json:"peak_rss_bytes"`
		Decode  struct {
			Runs []float64 `json:"runs"`
		} `json:"decode_tok_s"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	assert.Equal(t, 32, rep.Depth)
	assert.Len(t, rep.Decode.Runs, 1)
	assert.Positive(t, rep.PeakRSS)
	require.ErrorContains(t, runBench(context.Background(), []string{stories(t), "--depth", "-1"}, &out, &errOut), "--depth -1")
}

// TestBenchFlashAttn: --flash-attn and --kv-type reach the session (a
// quantized cache without flash attention is refused as llama.cpp does)
// and label the tests.
func TestBenchFlashAttn(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "16", "-n", "4", "-r", "1", "--depth", "32", "--flash-attn"}, &out, &errOut))
	assert.Contains(t, out.String(), "tg4 @ d32 fa")
	out.Reset()
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1", "--flash-attn", "--kv-type", "f16", "--json"}, &out, &errOut))
	var rep struct {
		FlashAttn bool   `json:"flash_attn"`
		KVType    string `json:"kv_type"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	assert.True(t, rep.FlashAttn)
	assert.Equal(t, "f16", rep.KVType)
	require.ErrorContains(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1", "--flash-attn", "--kv-type", "f32"}, &out, &errOut), "not f32")
	require.ErrorContains(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1", "--kv-type", "q8_0"}, &out, &errOut), "flash")
}

// TestFlashAccFlag: --flash-acc f32 reaches the bench and labels it; a
// bad value, or f32 without --flash-attn, is refused with what to do, in
// bench and in run (the plan's run.flash_acc: runtime's validate tests).
func TestFlashAccFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1", "--flash-attn", "--flash-acc", "f32", "--json"}, &out, &errOut))
	var rep struct {
		FlashAcc string `json:"flash_acc"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	assert.Equal(t, "f32", rep.FlashAcc)
	out.Reset()
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1", "--flash-attn", "--flash-acc", "f32"}, &out, &errOut))
	assert.Contains(t, out.String(), "tg2 fa f32acc")
	require.ErrorContains(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1", "--flash-acc", "f32"}, &out, &errOut), "add --flash-attn")
	require.ErrorContains(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "2", "-r", "1", "--flash-attn", "--flash-acc", "bf16"}, &out, &errOut), "want f16")
	require.ErrorContains(t, run(context.Background(), []string{stories(t), "--prompt", "x", "-n", "1", "--flash-acc", "f32"}, &out, &errOut), "add --flash-attn")
}

// TestBenchF16AsBF16: --f16-as-bf16 converts a small F16 model's matmul
// weights, says so on stderr, labels the tests and the JSON; off the CPU
// backend it is refused before anything loads.
func TestBenchF16AsBF16(t *testing.T) {
	vocab, err := gguf.Open(stories(t))
	require.NoError(t, err)
	defer vocab.Close()
	path := filepath.Join(t.TempDir(), "f16.gguf")
	f, err := os.Create(path)
	require.NoError(t, err)
	ft, err := synth.ParseFileType("f16")
	require.NoError(t, err)
	shape := synth.Shape{Dim: 64, FFN: 96, Layers: 1, Heads: 2, KVHeads: 2, Vocab: 512, Ctx: 64}
	require.NoError(t, synth.Write(f, synth.Options{Shape: shape, Type: ft, Seed: 3, Vocab: vocab}))
	require.NoError(t, f.Close())
	var out, errOut bytes.Buffer
	require.NoError(t, runBench(context.Background(), []string{path, "-p", "8", "-n", "2", "-r", "1", "--f16-as-bf16"}, &out, &errOut))
	assert.Contains(t, out.String(), "pp8 f16→bf16")
	assert.Contains(t, out.String(), "tg2 f16→bf16")
	// q, k, v, o, gate, up, down and the output: token_embd is a lookup only.
	assert.Contains(t, errOut.String(), "--f16-as-bf16: 8 F16 weights")
	out.Reset()
	require.NoError(t, runBench(context.Background(), []string{path, "-p", "8", "-n", "2", "-r", "1", "--f16-as-bf16", "--json"}, &out, &errOut))
	var rep struct {
		F16AsBF16 int `json:"f16_as_bf16"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	assert.Equal(t, 8, rep.F16AsBF16)
	out.Reset()
	require.NoError(t, runBench(context.Background(), []string{path, "-p", "8", "-n", "2", "-r", "1"}, &out, &errOut))
	assert.NotContains(t, out.String(), "f16→bf16")
	for _, b := range []string{"vulkan", "auto"} {
		require.ErrorContains(t, runBench(context.Background(), []string{path, "-p", "8", "-n", "2", "--f16-as-bf16", "--backend", b}, &out, &errOut), "--backend cpu")
	}
}
