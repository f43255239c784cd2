// Package synth builds llama-architecture GGUF models with deterministic
// random weights of realistic shapes (benchmarks, GPU runs, tests) and
// requantizes existing GGUF models.
//
// Both share llama.cpp's quantization policy: which tensors are quantized,
// in which order, and which type each gets under a mix such as Q4_K_M
// (src/llama-quant.cpp, llama_tensor_get_type, for llama models). Tensor
// bytes are produced row chunk by row chunk and streamed to the GGUF writer,
// so neither ever holds a whole F32 model in memory.
package synth
