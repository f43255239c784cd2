// Package model lowers a GGUF model's architecture to a weft graph.
//
// Architectures live in a registry (Register, Architectures): each one is
// an Arch that declares the hyperparameter keys it reads (with llama.cpp's
// defaults where keys are absent), the tensors it needs or may use (with
// their shapes), and a Lower function written with the shared building
// blocks of Lowering: embedding (with an optional scale), RMSNorm or
// LayerNorm with optional bias, linear projections with optional bias,
// self-attention (grouped-query, normal or NeoX RoPE over all or part of
// each head, the 1/√head_dim scale on the scores or on q), gated or plain
// feed-forward with SiLU or GELU, and a tied or untied output with
// optional bias. Adding an architecture is one file with one Register
// call: llama.go, qwen2.go, phi2.go and gemma.go are the examples.
//
// Lower checks every declared tensor before building anything and names
// each one that is missing or misshapen; the graph it builds serves both
// prefill and decode: the token count is the symbolic dimension T.
//
// Graph inputs: "tokens" I32[T], "positions" I32[T] and "rows" I32[R] (the
// batch rows whose logits are wanted). Output: "logits" F32[R, n_vocab].
package model
