package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/model/synth"
)

func init() {
	register(&command{
		name:    "synth",
		usage:   "-o OUT.gguf --shape tinyllama-1.1b|15m|260k|7b|qwen2-0.5b|phi2 --type q4_0|q4_k_m|q8_0|f16|… [--seed N] [--vocab VOCAB.gguf] [--dim --ffn --layers --heads --kv-heads --vocab-size --ctx N]",
		summary: "write a llama, qwen2 or phi2 model with deterministic random weights",
		run:     runSynth,
	})
}

// defaultVocab is the tokenizer used when --vocab is not given, relative to
// the working directory (the repository root); defaultVocabs has the
// other architectures' (the fixtures' vocabularies: Qwen's 151,936 tokens,
// GPT-2's 50,257).
const defaultVocab = "../shared/tokenizer/ggml-vocab-llama-spm.gguf"

var defaultVocabs = map[string]string{
	"qwen2": "../shared/models-arch/synth-qwen2-f32.gguf",
	"phi2":  "../shared/models-arch/synth-phi2-f32.gguf",
}

type synthFlags struct {
	out, shape, typ, vocab string
	seed                   uint64
	threads                int
	sizes                  map[string]*int
}

func newSynthFlags(fs *flag.FlagSet) *synthFlags {
	f := &synthFlags{sizes: map[string]*int{}}
	fs.StringVar(&f.out, "o", "", "output GGUF file (required)")
	fs.StringVar(&f.shape, "shape", "", "preset shape: tinyllama-1.1b, 15m, 260k, 7b (llama), qwen2-0.5b, phi2")
	fs.StringVar(&f.typ, "type", "f16", "file type: f32, f16, bf16, q4_0, q8_0, q4_k_m, …")
	fs.StringVar(&f.vocab, "vocab", "", "GGUF file whose tokenizer.* keys are copied (default "+defaultVocab+"; for qwen2 and phi2 the ../shared/models-arch fixture)")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.IntVar(&f.threads, "threads", 2, "conversion goroutines")
	for _, name := range []string{"dim", "ffn", "layers", "heads", "kv-heads", "vocab-size", "ctx"} {
		f.sizes[name] = fs.Int(name, 0, "override the shape's "+name)
	}
	return f
}

// shapeFromFlags starts from the preset (if any) and applies overrides.
func (f *synthFlags) shapeFromFlags() (synth.Shape, error) {
	var s synth.Shape
	if f.shape != "" {
		var err error
		if s, err = synth.LookupShape(f.shape); err != nil {
			return s, err
		}
	}
	for name, field := range map[string]*int{"dim": &s.Dim, "ffn": &s.FFN, "layers": &s.Layers, "heads": &s.Heads,
		"kv-heads": &s.KVHeads, "vocab-size": &s.Vocab, "ctx": &s.Ctx} {
		if v := *f.sizes[name]; v != 0 {
			*field = v
		}
	}
	if s.KVHeads == 0 {
		s.KVHeads = s.Heads
	}
	return s, s.Validate()
}

func runSynth(args []string) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	f := newSynthFlags(fs)
	pos, err := flagsAnyOrder(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || f.out == "" {
		return errors.New("usage: graphc synth -o OUT.gguf --shape NAME --type TYPE [--seed N] [--vocab VOCAB.gguf]")
	}
	opts, closeVocab, err := f.options()
	if err != nil {
		return err
	}
	defer closeVocab()
	start := time.Now()
	if err := synth.WriteFile(f.out, opts); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s (%s, seed %d) in %.1fs\n", f.out, opts.Type.Name, f.seed, time.Since(start).Seconds())
	return nil
}

func (f *synthFlags) options() (synth.Options, func(), error) {
	noop := func() {}
	s, err := f.shapeFromFlags()
	if err != nil {
		return synth.Options{}, noop, fmt.Errorf("shape: %w (give --shape or all of --dim --ffn --layers --heads --vocab-size --ctx)", err)
	}
	ft, err := synth.ParseFileType(f.typ)
	if err != nil {
		return synth.Options{}, noop, err
	}
	path := f.vocab
	if path == "" {
		path = defaultVocab
		if p, ok := defaultVocabs[s.Arch]; ok {
			path = p
		}
		if _, err := os.Stat(path); err != nil {
			abs, _ := filepath.Abs(path)
			return synth.Options{}, noop, fmt.Errorf("default vocabulary %s not found: give --vocab VOCAB.gguf", abs)
		}
	}
	vocab, err := gguf.Open(path)
	if err != nil {
		return synth.Options{}, noop, fmt.Errorf("vocabulary: %w", err)
	}
	opts := synth.Options{Shape: s, Type: ft, Seed: f.seed, Vocab: vocab, Workers: f.threads, Progress: os.Stderr}
	return opts, func() { vocab.Close() }, nil
}
