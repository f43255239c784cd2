package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/runtime/sample"
	"github.com/weft-ml/weft/runtime/tapdump"
)

var errUsage = errors.New("usage")

type config struct {
	model, prompt, file, logitsOut, kvType string
	flashAcc                               string
	dumpTensors, tap                       string
	n, ctx, threads, keep                  int
	jsonOut, ignoreEOS, noBOS, special     bool
	listDevices, flashAttn, contextShift   bool
	sampling                               sample.Params
	where                                  backendFlags
}

func parseFlags(args []string) (*config, error) {
	c := &config{sampling: sample.DefaultParams()}
	fs := flag.NewFlagSet("graphrun", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: graphrun MODEL.plan|MODEL.gguf [--prompt TEXT | --file F] [-n N] [flags]")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.prompt, "prompt", "", "prompt text")
	fs.StringVar(&c.file, "file", "", "read the prompt from this file")
	fs.IntVar(&c.n, "n", 128, "tokens to generate (-1: until EOS or the context is full)")
	fs.IntVar(&c.ctx, "ctx", 0, "context size in tokens (default: the plan's)")
	fs.IntVar(&c.threads, "threads", 0, "threads (default: all cores)")
	fs.StringVar(&c.kvType, "kv-type", "", "KV cache type f16|f32|q8_0|q4_0 (default: the plan's; q8_0 and q4_0 need --flash-attn)")
	fs.BoolVar(&c.flashAttn, "flash-attn", false, "flash attention, as llama.cpp's -fa (default: the plan's, off)")
	fs.StringVar(&c.flashAcc, "flash-acc", "", runtime.FlashAccUsage+" (default: the plan's)")
	fs.BoolVar(&c.contextShift, "context-shift", false, "when the context fills, discard half of the tokens after --keep and go on (llama.cpp's context shift; its default, not weft's)")
	fs.IntVar(&c.keep, "keep", 0, "with a context shift: prompt tokens kept besides BOS (-1: the whole prompt), as llama.cpp's --keep; giving it turns on --context-shift")
	fs.BoolVar(&c.ignoreEOS, "ignore-eos", false, "keep generating past end-of-sequence")
	fs.BoolVar(&c.noBOS, "no-bos", false, "do not add the BOS token")
	fs.BoolVar(&c.special, "special", false, "parse special-token text in the prompt")
	fs.BoolVar(&c.jsonOut, "json", false, "print one JSON object at the end instead of streaming")
	c.where = addBackendFlags(fs)
	fs.BoolVar(&c.listDevices, "list-devices", false, "list the devices of every backend and exit")
	fs.StringVar(&c.logitsOut, "logits-out", "", "write every prompt position's logits (float32 LE, [n_prompt][n_vocab])")
	fs.StringVar(&c.dumpTensors, "dump-tensors", "", "write the tapped nodes' values of every batch into this new folder (compare two with graphc tensordiff)")
	fs.StringVar(&c.tap, "tap", "", "with --dump-tensors: the nodes to tap, comma-separated globs over names or ops (default: every node)")
	sp := &c.sampling
	fs.Var(float32Flag{&sp.Temp}, "temp", "temperature (0: greedy)")
	fs.IntVar(&sp.TopK, "top-k", sp.TopK, "top-k (0: off)")
	fs.Var(float32Flag{&sp.TopP}, "top-p", "top-p (1: off)")
	fs.Var(float32Flag{&sp.MinP}, "min-p", "min-p (0: off)")
	fs.Var(float32Flag{&sp.RepeatPenalty}, "repeat-penalty", "repeat penalty (1: off)")
	fs.IntVar(&sp.RepeatLastN, "repeat-last-n", sp.RepeatLastN, "tokens the penalties look back over")
	fs.Var(float32Flag{&sp.PresencePenalty}, "presence-penalty", "presence penalty (0: off)")
	fs.Var(float32Flag{&sp.FrequencyPenalty}, "frequency-penalty", "frequency penalty (0: off)")
	fs.Uint64Var(&sp.Seed, "seed", 0, "random seed (default: a new one each run)")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, errUsage
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if c.listDevices && len(pos) == 0 {
		return c, nil
	}
	if len(pos) != 1 {
		fs.Usage()
		return nil, errUsage
	}
	c.model = pos[0]
	seeded := false
	fs.Visit(func(f *flag.Flag) {
		seeded = seeded || f.Name == "seed"
		c.contextShift = c.contextShift || f.Name == "keep"
	})
	if c.keep < -1 {
		return nil, fmt.Errorf("--keep %d: want -1 (the whole prompt) or a number of tokens", c.keep)
	}
	if !seeded {
		c.sampling.Seed = uint64(time.Now().UnixNano())
	}
	return c, c.readPrompt()
}

func (c *config) readPrompt() error {
	if c.file == "" {
		return nil
	}
	if c.prompt != "" {
		return fmt.Errorf("give --prompt or --file, not both")
	}
	var err error
	c.prompt, err = safefile.ReadText(c.file, "prompt file")
	return err
}

// normalizeSampling maps llama.cpp's conventions onto the sampler's:
// --repeat-last-n -1 means the whole context, a negative temperature greedy.
func (c *config) normalizeSampling(ctx int) {
	if c.sampling.RepeatLastN < 0 {
		c.sampling.RepeatLastN = ctx
	}
	if c.sampling.Temp < 0 {
		c.sampling.Temp = 0
	}
}

type float32Flag struct{ p *float32 }

func (f float32Flag) String() string {
	if f.p == nil {
		return ""
	}
	return fmt.Sprint(*f.p)
}

func (f float32Flag) Set(s string) error {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil || math.IsNaN(v) {
		return fmt.Errorf("not a number: %q", s)
	}
	*f.p = float32(v)
	return nil
}

// run generates from the flags in args. When ctx is cancelled (a signal)
// it stops between two batches of the prompt or two generated tokens and
// still prints what it made (the text, the --json object) and the summary.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	if c.listDevices {
		return listDevices(stdout)
	}
	if c.tap != "" && c.dumpTensors == "" {
		return fmt.Errorf("--tap chooses the nodes for --dump-tensors: give that too")
	}
	if c.dumpTensors != "" && c.tap == "" {
		c.tap = "*"
	}
	start := time.Now()
	m, err := openModel(ctx, c.model, c.where.options(runtime.Options{Threads: c.threads, Taps: c.tap}, stderr))
	if errors.Is(err, errLoadCancelled) {
		report(stdout, stderr, c, time.Since(start), &runtime.Result{StopReason: "cancelled"})
		return nil
	}
	if err != nil {
		return err
	}
	defer m.Close()
	noteBackend(stderr, m)
	so := runtime.SessionOptions{Ctx: c.ctx, KVType: c.kvType, FlashAttn: c.flashAttn, FlashAcc: c.flashAcc}
	if c.dumpTensors != "" {
		dump, err := tapdump.Create(c.dumpTensors, tapdump.Meta{Source: c.model, Backend: m.Backend, Pattern: c.tap, Prompt: c.prompt})
		if err != nil {
			return err
		}
		defer func() {
			if cerr := dump.Close(); err == nil {
				err = cerr
			}
			fmt.Fprintf(stderr, "dumped %d tensors to %s\n", dump.Len(), c.dumpTensors)
		}()
		so.Tap = func(t runtime.TapInfo, v []float32) error {
			return dump.Write(tapdump.Entry{Step: t.Step, Pos: t.Pos, Node: t.Node, Name: t.Name, Op: t.Op, Layer: t.Layer,
				Backend: t.Backend, Rows: t.Rows, Width: t.Width}, v)
		}
	}
	var ids []int32 // the prompt's tokens, when a context shift needs their number
	if c.contextShift {
		if ids, err = m.Tokenizer.Encode(c.prompt, !c.noBOS, c.special); err != nil {
			return fmt.Errorf("tokenizing the prompt: %w", err)
		}
		if len(ids) == 0 {
			return errors.New("empty prompt: nothing to evaluate (give a prompt, or let the model add its BOS token)")
		}
		so.ContextShift = true
		so.Keep = keepTokens(c.keep, ids, m.Tokenizer.AddBOS() && !c.noBOS, c.ctx, m.Plan.Run.Ctx)
	}
	s, err := m.NewSession(so)
	if err != nil {
		return err
	}
	noteKV(stderr, m, s, so)
	c.normalizeSampling(s.Context())
	opts := runtime.GenerateOptions{MaxTokens: c.n, Sampling: c.sampling, IgnoreEOS: c.ignoreEOS, NoBOS: c.noBOS, ParseSpecial: c.special}
	if c.logitsOut != "" {
		if _, err := safefile.CheckOutput(c.logitsOut, m.Files()...); err != nil {
			return err // before the prompt runs, not after
		}
		opts.PromptLogits = func(l []float32) error { return writeFloats(c.logitsOut, l, m.Files()...) }
	}
	out := bufio.NewWriter(stdout)
	onToken := func(_ int32, text string) error {
		if c.jsonOut {
			return nil
		}
		io.WriteString(out, text)
		return out.Flush()
	}
	var res *runtime.Result
	var genErr error
	if ids != nil {
		res, genErr = s.GenerateTokens(ctx, ids, opts, onToken)
	} else {
		res, genErr = s.Generate(ctx, c.prompt, opts, onToken)
	}
	out.Flush()
	if res == nil {
		return genErr
	}
	report(stdout, stderr, c, m.LoadTime, res)
	return genErr
}

// keepTokens is runtime.KeepTokens for graphrun's flags: --keep N
// (-1: the whole prompt) of prompt, in a context of ctx (0: the plan's).
func keepTokens(keep int, prompt []int32, bos bool, ctx, planCtx int) int {
	if ctx == 0 {
		ctx = planCtx
	}
	return runtime.KeepTokens(keep, len(prompt), bos, ctx)
}

// report ends the output: the JSON object (--json) or a newline after the
// streamed text on stdout, then the summary on stderr.
func report(stdout, stderr io.Writer, c *config, load time.Duration, res *runtime.Result) {
	if c.jsonOut {
		writeJSON(stdout, load, res)
	} else {
		fmt.Fprintln(stdout)
	}
	summarize(stderr, load, res)
}

func summarize(w io.Writer, load time.Duration, r *runtime.Result) {
	prefill := fmt.Sprintf("%.1f tok/s", r.PrefillTokensPerSecond())
	if r.PrefillCancelled {
		prefill = fmt.Sprintf("cancelled after %.0f ms", float64(r.PrefillTime.Microseconds())/1000)
	}
	shifts := ""
	if r.ContextShifts > 0 {
		shifts = fmt.Sprintf(" | context shifts: %d", r.ContextShifts)
	}
	fmt.Fprintf(w, "\nload %.0f ms | prompt %d tokens, %s | generated %d tokens, %.1f tok/s%s | stop: %s\n",
		float64(load.Microseconds())/1000, len(r.PromptTokens), prefill,
		len(r.Tokens), r.DecodeTokensPerSecond(), shifts, r.StopReason)
}

func writeJSON(w io.Writer, load time.Duration, r *runtime.Result) {
	ids := func(x []int32) []int32 { // [] rather than null
		if x == nil {
			return []int32{}
		}
		return x
	}
	json.NewEncoder(w).Encode(map[string]any{
		"prompt_tokens": ids(r.PromptTokens), "tokens": ids(r.Tokens), "text": r.Text, "stop_reason": r.StopReason,
		"load_ms": load.Seconds() * 1000, "prefill_ms": r.PrefillTime.Seconds() * 1000, "decode_ms": r.DecodeTime.Seconds() * 1000,
		"prefill_tok_s": r.PrefillTokensPerSecond(), "decode_tok_s": r.DecodeTokensPerSecond(),
		"context_shifts": r.ContextShifts,
	})
}

// writeFloats writes little-endian float32s (the layout of ../shared/reference),
// never over one of inputs.
func writeFloats(path string, xs []float32, inputs ...string) error {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return safefile.WriteFile(path, b, inputs...)
}
