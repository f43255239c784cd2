// Package reference reads the llama.cpp reference outputs in
// ../shared/reference (see its README for the format and the acceptance
// rule) and holds the comparisons every backend's end-to-end tests make
// against them: relative row error, top-5 agreement, and llama.cpp's own
// f16-versus-f32 KV spread that sets the bar.
package reference
