// Package cpu executes a weft graph on the CPU.
//
// Compile turns a verified graph into a Program: an execution order, one
// kernel per node, and a buffer slot per activation, with slots reused once
// a value's last reader has run (liveness-based reuse, sized for the largest
// batch). A Program is immutable and shared; each session owns a State with
// its activation buffers and KV cache, so several sessions can run one
// Program concurrently.
//
// Kernels are the pure-Go reference kernels of ops/ref and the block
// formats of quant; matrix multiplication splits output rows across
// goroutines.
package cpu
