// Package gguf reads and writes GGUF files, the model container of llama.cpp.
//
// Open memory-maps a file and parses only its header: metadata and the tensor
// table. Tensor bytes stay in the mapping and are paged in when a caller
// touches the slice returned by TensorData, so opening a multi-gigabyte model
// is cheap. Parse does the same for a byte slice (tests, fuzzing).
//
// Every count, length and offset in a file is untrusted. The parser checks
// each one against the bytes that remain before it allocates or slices, and
// reports problems as *FormatError values naming the byte offset; it never
// panics on malformed input.
package gguf
