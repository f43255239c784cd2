package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/model/synth"
)

func init() {
	register(&command{
		name:    "quantize",
		usage:   "IN.gguf OUT.gguf TYPE   (TYPE: F32, F16, BF16, Q4_0 … Q8_0, Q2_K … Q6_K, Q4_K_M, Q5_K_S, IQ4_NL, IQ4_XS, …)",
		summary: "convert a llama model's weights to another type or mix, like llama-quantize",
		run:     runQuantize,
	})
}

func runQuantize(args []string) error {
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	workers := fs.Int("threads", 2, "conversion goroutines")
	pos, err := flagsAnyOrder(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return errors.New("usage: graphc quantize IN.gguf OUT.gguf TYPE")
	}
	inPath, outPath := pos[0], pos[1]
	ft, err := synth.ParseFileType(pos[2])
	if err != nil {
		return err
	}
	in, err := gguf.Open(inPath)
	if err != nil {
		return err
	}
	defer in.Close()
	opts := synth.RequantizeOptions{Type: ft, Workers: *workers, Progress: os.Stderr}
	kv, specs, err := synth.RequantizePlan(in, opts)
	if err != nil {
		return err
	}
	if err := gguf.WriteFile(outPath, kv, specs, inPath); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s (%s)\n", outPath, ft.Name)
	return nil
}
