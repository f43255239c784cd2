// Package simd provides the fast CPU kernels for quantized dot products
// and activation quantization: amd64 assembly generated with avo by
// codegen/cmd/simdgen (AVX2+FMA+F16C, and AVX-512 VNNI), chosen once at
// start-up from the CPU's features, with the pure-Go kernels of package
// quant as the fallback and the test oracle.
//
// The environment variable WEFT_PUREGO=1 or the build tag purego force the
// pure-Go path; other architectures always use it.
//
// Integer block sums are exact; only the float accumulation order differs
// from quant.VecDot (vector lanes with FMA instead of one serial sum), so
// dot products agree with it to float32 rounding of the summation.
// QuantizeRow is bit-identical to quant.QuantizeRow.
//
// Gemm serves prefill: micro-kernels of 4 weight rows × up to 2–5 tokens
// (by format and variant) reuse each decoded weight block across tokens
// and each activation block across rows; other shapes loop VecDotRows.
// On AVX-512 the F16 kernels sum in llama.cpp's AVX-512 orders: the GEMM
// tiles in tinyBLAS<16>'s (one 16-lane accumulator per row and token), the
// dot kernel in ggml_vec_dot_f16's; products of at least 256 values and 6
// tokens take the wide tiles (gemm_f16_amd64.go): operands widened to
// float32 once per k-block, the same bits as the F16 tiles.
//
// Repack and PackedGemm serve both on the packed layouts (Q4_0, Q8_0,
// Q4_K, Q6_K, IQ4_XS; see packed.go, packed_k.go, packed_q6k.go,
// packed_iq4xs.go): 16 rows
// interleaved so one VPDPBUSD computes all 16, for 1–8 tokens a call.
package simd
