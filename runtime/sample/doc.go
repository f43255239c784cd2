// Package sample turns a row of logits into the next token id.
//
// It implements the sampling chain that graphrun exposes on its command
// line, with llama.cpp's common-sampler semantics (commit c392e5094):
//
//	penalties → top-k → top-p → min-p → temperature → draw
//
// Penalties (repeat, frequency, presence) use the last RepeatLastN tokens
// recorded with Accept. Top-p and min-p judge probabilities at temperature 1;
// temperature only reshapes the distribution the survivors are drawn from.
// Temp 0 is greedy: the argmax of the penalized logits, ties to the lower id.
//
// A Sampler draws from its own PCG generator seeded from Params.Seed, so a
// seed reproduces a run exactly; the generator is not the mt19937 llama.cpp
// uses, so seeded draws do not match llama.cpp's token for token. A Sampler
// keeps its scratch buffers between calls: after the first call Sample does
// not allocate. A Sampler is not safe for concurrent use.
package sample
