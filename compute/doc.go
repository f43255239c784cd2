// Package compute builds, compiles and runs graphs of your own: not a
// language model's lowering but any dataflow of weft's ops (and of ops a
// program registers itself, see ops.Register) over Go slices.
//
//	b := compute.NewBuilder()
//	x := b.Input("x", 4)                               // F32 [rows, 4]
//	w := b.Const("w", []float32{…}, 8, 4)              // an 8×4 matrix
//	h := b.Op(ops.SiLU, nil, b.Op(ops.MatMul, nil, x, w))
//	b.Output("h", h)
//	p, err := b.Compile(compute.Options{})             // passes, placement, memory plan
//	s, err := p.NewSession()
//	out, err := s.Run(compute.F32("x", xs))            // out["h"]: rows×8 values
//
// Every value is a matrix of rows (the step's batch, bound when it runs)
// by a fixed width: inputs are F32 [rows, width] or I32 indices [rows];
// weights are constant vectors or matrices, from Go slices (Const, or
// Weight for raw bytes of any GGUF type) or a GGUF file (FileWeight).
// Mistakes (an unknown op, shapes that do not fit, a missing input) are
// errors, never panics: the Builder records the first one (Err) and
// Compile returns it.
//
// Graphs of your own run on the CPU backend; the compiled graph carries
// every pass's decisions like a model's plan (Program.Graph, Program.Passes).
package compute
