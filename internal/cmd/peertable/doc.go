// Command peertable turns the results of .ci/device-peers.sh (weft's
// Vulkan backend and a CUDA peer's llama-bench on the same files, in
// alternating rounds on the GPU machine) into the markdown table of
// docs/benchmarks-vulkan.md: per weight type, weft's and the peer's
// medians and each round's paired ratio (weft ÷ peer), as ranges over
// rounds with their median.
//
//	go run ./internal/cmd/peertable DIR...
//
// Each DIR holds PEER-TYPE-rN.json (llama-bench -o json; PEER is llama or
// ik) and weft-TYPE-rN.json (graphrun bench --json) or weft-TYPE-rN.txt
// (graphrun bench's table) for the same TYPE and round N. The peer's
// figure is the median of its samples_ts (its avg_ts includes
// ik_llama.cpp's slow first prompt); a round without both engines' files
// is left out and said so on stderr.
package main
