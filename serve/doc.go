// Package serve is weft's OpenAI-compatible HTTP server (graphrun serve).
//
// One scheduler goroutine owns a runtime.Batcher of --parallel slots and
// drives every request through it: each step gathers one token from
// every decoding slot and a chunk of prompt from prefilling ones (at most
// the program's batch in all), so a long prompt is prefilled in pieces
// between the decode steps of the others, and requests join and leave
// between steps. HTTP handlers never touch the model: they validate,
// tokenize, queue a request and relay its tokens (as one JSON answer or
// as Server-Sent Events).
//
// A finished request leaves its tokens in its slot. A new request takes
// the free slot whose tokens share the longest prefix with its prompt and
// keeps that prefix's KV cells (prefix cache), so multi-turn chats and
// shared system prompts are not recomputed.
//
// Endpoints: POST /v1/completions, /v1/chat/completions, /v1/embeddings,
// /tokenize, /detokenize; GET /v1/models, /health, /metrics (Prometheus
// text). Errors use OpenAI's JSON shape ({"error": {"message", "type",
// "param", "code"}}).
package serve
