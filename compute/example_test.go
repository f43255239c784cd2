package compute_test

import (
	"fmt"

	"github.com/weft-ml/weft/compute"
	"github.com/weft-ml/weft/ops"
)

// A two-layer perceptron over Go slices: y = W2·silu(W1·x + b1).
func Example() {
	b := compute.NewBuilder()
	x := b.Input("x", 2)
	w1 := b.Const("w1", []float32{1, 0, 0, 1, 1, 1}, 3, 2) // 3 hidden units of 2 inputs
	b1 := b.Const("b1", []float32{0, 0, -1}, 3)
	w2 := b.Const("w2", []float32{1, -1, 0.5}, 1, 3)
	h := b.Op(ops.SiLU, nil, b.Op(ops.Add, nil, b.Op(ops.MatMul, nil, x, w1), b1))
	b.Output("y", b.Op(ops.MatMul, nil, h, w2))

	p, err := b.Compile(compute.Options{MaxRows: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := p.NewSession()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := s.Run(compute.F32("x", []float32{1, 2, 0, 0})) // two rows
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f\n", out["y"])
	// Output: [-0.1497 -0.1345]
}

// Shapes that do not fit are errors from Compile, never panics.
func ExampleBuilder_Err() {
	b := compute.NewBuilder()
	x := b.Input("x", 3)
	w := b.Const("w", make([]float32, 8), 2, 4)
	b.Output("y", b.Op(ops.MatMul, nil, x, w))
	_, err := b.Compile(compute.Options{})
	fmt.Println(err)
	// Output: MatMul "MatMul.2" (layer -1): inner dimensions differ: F32[T,3] · F32[2,4]ᵀ
}
