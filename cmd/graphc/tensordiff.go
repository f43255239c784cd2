package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/weft-ml/weft/runtime/tapdump"
)

func init() {
	register(&command{
		name:    "tensordiff",
		usage:   "DUMP_A DUMP_B [--tol REL] [--all]",
		summary: "compare two graphrun --dump-tensors folders node by node and name the first node where they differ",
		run:     runTensorDiff,
	})
}

// errDiverged is tensordiff's error when the dumps differ (exit status 1).
var errDiverged = errors.New("the dumps differ")

func runTensorDiff(args []string) error { return tensorDiff(args, os.Stdout) }

func tensorDiff(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tensordiff", flag.ContinueOnError)
	tol := fs.Float64("tol", 5e-3, "largest max|Δ| relative to a value's largest magnitude that counts as agreement")
	all := fs.Bool("all", false, "print every compared value, not only the diverging ones")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("want two dump folders, got %d arguments", len(pos))
	}
	if !(*tol >= 0) {
		return fmt.Errorf("--tol %v: want a relative difference ≥ 0", *tol)
	}
	a, err := tapdump.Read(pos[0])
	if err != nil {
		return err
	}
	b, err := tapdump.Read(pos[1])
	if err != nil {
		return err
	}
	r, err := tapdump.Diff(a, b, *tol)
	if err != nil {
		return err
	}
	if len(r.Compared) == 0 {
		return fmt.Errorf("the dumps have no value in common (A: %d values, B: %d)", len(a.Entries), len(b.Entries))
	}
	r.Write(stdout, !*all)
	if r.First >= 0 {
		return errDiverged
	}
	return nil
}
