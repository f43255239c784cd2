// Command graphrun runs a compiled weft plan (or a GGUF model directly):
// it streams generated text to stdout and a summary to stderr, and
// benchmarks prefill and decode.
//
//	graphrun MODEL.plan --prompt "Once upon a time" -n 64
//	graphrun bench MODEL.plan -p 512 -n 128 -r 5 [--threads N] [--bandwidth] [--json]
package main
