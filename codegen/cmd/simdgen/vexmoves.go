package main

import (
	"os"
	"regexp"
)

// avo's Load and Store move a float32 or float64 argument or result with
// the legacy SSE MOVSS and MOVSD. A legacy SSE instruction run while the
// upper halves of the vector registers are dirty (after ymm or zmm work,
// before VZEROUPPER) costs a state transition on Intel cores: on the
// Xeon the kernels are measured on, a 64-score flashScan call took
// 225 ns with its result stored by MOVSS and 20 ns with VMOVSS. The VEX
// forms have the same effect on the value, so every such move is
// rewritten to its VEX form.
var legacyScalarMove = regexp.MustCompile(`(?m)^(\s+)(MOVSS|MOVSD)(\s+)(X\d+, \w+\+\d+\(FP\)|\w+\+\d+\(FP\), X\d+)$`)

// vexScalarMoves rewrites the generated file's legacy scalar moves of
// arguments and results (see above).
func vexScalarMoves(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out := legacyScalarMove.ReplaceAll(src, []byte("${1}V${2}${3}${4}"))
	return os.WriteFile(path, out, 0o644)
}
