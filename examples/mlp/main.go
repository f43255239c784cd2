// Command mlp builds a small non-LLM graph from Go slices, a two-layer
// perceptron with hand-set weights that computes XOR, compiles it (the
// passes fuse each matmul with its bias) and runs all four inputs in one
// step.
//
//	go run ./examples/mlp
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/weft-ml/weft/compute"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mlp:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	b := compute.NewBuilder()
	x := b.Input("x", 2)
	// Hidden units: silu(10·(a+b) − 5) is about 5 when either input is
	// set, silu(10·(a+b) − 15) only when both are.
	w1 := b.Const("w1", []float32{10, 10, 10, 10}, 2, 2)
	b1 := b.Const("b1", []float32{-5, -15}, 2)
	h := b.NamedOp(ops.SiLU, "hidden", nil, b.NamedOp(ops.Add, "h_pre", nil, b.NamedOp(ops.MatMul, "h_mm", nil, x, w1), b1))
	// out = 0.2·(h0 − 3.02·h1): about 1 for one input set, 0 otherwise.
	w2 := b.Const("w2", []float32{0.2, -0.604}, 1, 2)
	y := b.NamedOp(ops.MatMul, "out", nil, h, w2)
	b.Output("xor", y)

	p, err := b.Compile(compute.Options{MaxRows: 4})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "compiled graph:")
	if err := graph.WriteText(w, p.Graph()); err != nil {
		return err
	}
	s, err := p.NewSession()
	if err != nil {
		return err
	}
	in := []float32{0, 0, 0, 1, 1, 0, 1, 1}
	out, err := s.Run(compute.F32("x", in))
	if err != nil {
		return err
	}
	for i, v := range out["xor"] {
		fmt.Fprintf(w, "xor(%v, %v) = %.2f\n", in[2*i], in[2*i+1], v)
	}
	return nil
}
