// Package ref holds pure-Go reference kernels for the llama family of
// models: the test oracle for every fast CPU and GPU kernel in weft, and the
// kernels the CPU executor runs when no faster one applies.
//
// The kernels mirror the numerics of llama.cpp's CPU backend (commit
// c392e5094, built with AVX-512, AVX512_BF16 and llamafile sgemm, which is
// how the references in ../shared/reference were made): where ggml sums in
// double we sum in double; where it rounds to f16 or bf16 we round at the same
// point; exponentials use the same polynomial approximation as ggml's
// vectorised expf; dot products keep ggml's 16-lane accumulators and its
// reduction tree, so that most results agree bit for bit and the rest within
// a few ulp.
//
// Layout: tensors are row-major with the innermost dimension last (ggml's
// ne0 is the row length). Every function works on caller-owned slices and
// allocates nothing; functions that return no error document their
// preconditions, which the executor checks when it compiles a plan.
package ref
