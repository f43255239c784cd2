// Package cpu executes a weft graph on the CPU.
//
// Compile turns a verified graph into a Program: an execution order, one
// kernel per node, and each activation's place in one arena (the memory
// plan's offsets when the graph carries them, else liveness-based slot
// reuse). A Program is immutable and shared; each session owns a State
// with its arena, KV cache and scratch, so several sessions can run one
// Program concurrently.
//
// Kernels: every matmul, fused or not, runs through one tile function
// (matmulPart.tile) that calls the SIMD kernels of package simd (GEMM for
// batches, row kernels for one token, the packed VNNI kernels for weights
// repacked at compile time; pure Go where the CPU has none). Attention
// (attention.go) keeps V transposed in the KV cache as llama.cpp does and
// uses the f16 SIMD dot products. Elementwise ops use ops/ref. Work is
// split across a persistent worker pool (parallel.go).
package cpu
