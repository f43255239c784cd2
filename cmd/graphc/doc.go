// Command graphc inspects, converts and compiles GGUF models.
//
//	graphc inspect M.gguf [--json]              architecture (and whether weft runs it), hyperparameters, tensors
//	graphc tokenize M.gguf [--pieces] TEXT      token ids
//	graphc quantize IN.gguf OUT.gguf Q4_K_M     requantize with llama.cpp's type mixes
//	graphc synth -o M.gguf --shape S --type T   random weights of a real shape
//	graphc compile M.gguf -o M.plan [-O0 …]     lower, optimise, write a plan
//	graphc dump M.plan [--format text|json|dot|html] [--profile P.json [--phase decode]]
//
// Each subcommand lives in its own file and registers itself in init.
package main
