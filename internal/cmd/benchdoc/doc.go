// Command benchdoc runs weft's benchmark over TinyLlama-1.1B-shaped models
// of each weight type (made with graphc synth when missing), optionally runs
// llama.cpp's and ik_llama.cpp's llama-bench on the same files in the same
// rotating rounds (each peer with its own columns, targets and chart bars;
// see peer), and writes docs/benchmarks.md and docs/benchmarks.svg; the
// hand-kept GPU section beside it (docs/benchmarks-gpu.md: those figures
// come from the lent GPU machine) is appended to the report.
// `make bench` calls it; build-ik.sh builds ik_llama.cpp the way the report
// expects, outside the repository.
package main
