// Package quant implements ggml's tensor block formats in pure Go: F32, F16,
// BF16, the legacy 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1),
// the 256-element K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K), the
// non-linear IQ4_NL (32 elements) and IQ4_XS (256), the ternary TQ1_0 and
// TQ2_0, and, read-only (Dequantize and VecDot; see Writable), the lattice
// formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M.
//
// It is the numerical reference of the project: Dequantize agrees bit for bit
// with llama.cpp's dequantize_row_* functions, Quantize reproduces llama.cpp's
// reference quantizers (quantize_row_*_ref; for the IQ types the quantizer
// llama-quantize calls, quantize_iq*, without an importance matrix) byte for
// byte as ISO C evaluates them (no FMA contraction), and VecDot follows the
// per-block arithmetic of ggml's ggml_vec_dot_* kernels (the generic ones,
// except where a type's comment says otherwise). Fast kernels elsewhere are
// tested against it, so the code favours clarity over speed and uses no
// assembly.
package quant
