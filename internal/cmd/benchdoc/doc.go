// Command benchdoc runs weft's benchmark over TinyLlama-1.1B-shaped models
// of each weight type (made with graphc synth when missing), optionally runs
// llama.cpp's llama-bench on the same files in the same run, and writes
// docs/benchmarks.md and docs/benchmarks.svg. `make bench` calls it.
package main
