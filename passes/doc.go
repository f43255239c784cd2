// Package passes holds weft's graph optimisation passes and the pipeline
// that runs them: simplification (dead code, common subexpressions, no-op
// folding), fusions (dequantize+matmul, QKV projections, gate/up with
// SwiGLU, norm with its weight, matmul with its residual add), backend
// placement with copy insertion, weight repacking and memory planning.
//
// Every decision is stored in the graph (a node's Backend, Cause, Fused,
// Buffer and Layout; the graph's Splits and Memory) and every pass reports
// what it changed, so a plan can be inspected with graphc dump.
package passes
