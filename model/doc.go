// Package model lowers a GGUF model's architecture to a weft graph.
//
// Each architecture registers a lowering function by its
// general.architecture name; Lower reads the hyperparameters (with
// llama.cpp's defaults where keys are absent), checks that every tensor it
// needs exists with the expected shape, and builds one graph that serves
// both prefill and decode: the token count is the symbolic dimension T.
//
// Graph inputs: "tokens" I32[T], "positions" I32[T] and "rows" I32[R] (the
// batch rows whose logits are wanted). Output: "logits" F32[R, n_vocab].
package model
