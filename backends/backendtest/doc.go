// Package backendtest is the conformance suite every executing backend
// passes: it runs each op of the catalogue (package ops, fused ops
// included) on a backends.Executor and compares the results with the
// pure-Go reference kernels of ops/ref, on fresh random inputs of awkward
// sizes. The CPU backend, the Vulkan backend and any custom backend are
// held to the same tests (the idea of gonum's graph/testgraph):
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, mybackend.Backend{}, backendtest.Options{
//			Unsupported: []string{"Dequantize", "MatMul/Q2_K"},
//		})
//	}
//
// # How a backend is driven
//
// Only through the contract of package backends. For every case the suite
// builds a small graph with the inputs every lowering declares ("tokens",
// "positions", "rows"): activations are rows of random F32 tables looked
// up by GetRows with the tokens, weights are Weight nodes whose bytes the
// suite serves (backends.Weights) after quantizing random values with
// package quant's reference quantizers; then comes the node under test,
// then SelectRows by the rows input, named "logits". The graph goes
// through the passes a plan goes through (placement on the backend, the
// backend's weight layouts if it offers any, memory planning for the
// largest batch) and Executor.Load; a State runs batches of 1, 3, 17, 1 and
// 5 tokens at consecutive positions, each with new random tokens and the
// rows asked for in random order. GetRows of F32 tables and SelectRows are
// therefore needed by every case.
//
// Matmul-family cases run twice on a backend with weight layouts: with the
// layouts that apply (as a compiled plan runs) and without them. The
// fused ops are built directly, as the passes build them; MatMulQKV is
// read through its Part nodes, the only way a plan reads it. Attention runs
// two sessions of one Program interleaved, each over several batches, with
// an f16 and an f32 KV cache; the reference keeps its own cache per
// session.
//
// # Subtests and keys
//
// Subtests are named op/variant/shape, for example
// "MatMul/Q4_K/K=256,N=37" or "Attention/f16/H=8,KV=2,hd=64". The
// variant is the weight or table type for GetRows, Dequantize and the
// matmul family (MatMulQKV also has mixed-type variants such as
// "Q4_K+Q4_K+Q6_K"), the KV type for Attention, "norm" or "neox" for RoPE
// and "same", "row" or "row2d" (the second operand's shape) for Mul and
// Add. Options.Unsupported and Options.Tolerances take the op ("MatMul")
// or the op and variant ("MatMul/Q2_K").
//
// A case listed as unsupported is not run: the suite checks instead that
// Supports refuses the node with a non-nil cause (for a KV type, that
// NewState refuses it). A case not listed must be accepted by Supports.
//
// # Tolerances
//
// A case passes when every element satisfies |got − want| ≤ Abs + Rel·m,
// or, with Exact, has the reference's float32 bits. m is the op's error
// scale, the size of the terms the element is made of, so that a bound
// holds for any summation order:
//
//	op                                 m                                         default Rel
//	GetRows, Dequantize                largest |value| of the row                2⁻²²
//	SelectRows, Copy                   |want|                                    0 (exact values)
//	Mul, Scale                         |want|                                    2⁻²³
//	Add                                |a| + |b|                                 2⁻²³
//	SiLU, SwiGLU                       |want|                                    2⁻¹⁶
//	Softmax                            |want|                                    2⁻¹⁵
//	GELU                               |want| + 2⁻¹³·|x| (Abs 2⁻²⁴)             2⁻¹⁰
//	RMSNorm(Mul)                       |x|/rms (·|w|)                            2⁻¹⁴
//	LayerNorm(Mul, MulAdd)             (|x|+|mean|)/std (·|w|, +|want|)          2⁻¹⁴
//	RoPE                               |x₀|+|x₁| of the rotated pair             2⁻¹²
//	MatMul, MatMulQKV, Part            Σₖ|wₖ·aₖ|                                 2⁻¹⁴
//	MatMulAdd                          Σₖ|wₖ·aₖ| + |r| + |want|                  2⁻¹⁴
//	MatMulBias                         Σₖ|wₖ·aₖ| + |b| + |want|                  2⁻¹⁴
//	MatMulGateUpSwiGLU                 1.1·Σ_g·|u| + |silu(g)|·Σ_u + |want|      2⁻¹⁴
//	MatMulGateUpGeGLU                  1.13·Σ_g·|u| + |gelu(g)|·Σ_u + |want|     2⁻¹⁴
//	                                   + 2⁴·(|g| + |gelu(g)|)·|u| (binary16 steps)
//	Attention                          derived bound (below)                     1
//
// In the matmul scales w is the dequantized weight and a the activation
// converted to the weight's dot-product type (binary16, bfloat16, Q8_0,
// Q8_1 or Q8_K, as quant.VecDotType says); Σ_g and Σ_u are the gate's and
// the up projection's. For Attention m is the largest difference between
// two implementations that round the query and the probabilities at the
// same points (binary16 with an f16 cache): a summation-order term
// 2·N·u·Σₚ p̂ₚ|vₚ| over the N cells of P·V, plus, with an f16 cache, one
// binary16 step of every probability whose value the scores' own rounding
// error could carry across a rounding point (f32: a relative 2η, η the
// probabilities' error from the scores), times 1.25. The defaults assume a backend converts activations
// exactly as quant.QuantizeRow does and rounds at the points ops/ref
// rounds (the CPU backend's numerics, which follow llama.cpp); only the
// order of summation, the accuracy of exp, sin and cos, and FMA contraction
// may differ. A backend that quantizes activations its own way states a
// looser tolerance in Options.Tolerances, and a backend that matches the
// reference bit for bit states Exact (ExactFor) where it does.
//
// Failures name the batch row, column, both values, the distance in ulp and
// in multiples of the bound; passing cases log how close they came. Every
// run logs its seed; Options.Seed replays it. A panic inside the backend
// fails its subtest only.
package backendtest
