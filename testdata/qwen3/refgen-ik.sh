#!/bin/sh
# refgen-ik.sh IK_SRC IK_BUILD OUT: builds refgen-ik, ../quants/tools/refgen.cpp adapted to
# ik_llama.cpp's older llama.h (model in the tokenizer calls, older names) with ik's experimental
# graph rewrites off, linked against an ik_llama.cpp build. f32 caches: see README.md.
set -e
src=$1 build=$2 out=$3
here=$(dirname "$0")
sed -e 's/const llama_vocab \*/const llama_model */g; s/llama_model_get_vocab(model)/model/g' \
    -e 's/llama_vocab_n_tokens/llama_n_vocab/g; s/llama_model_free/llama_free_model/g' \
    -e 's/llama_model_n_ctx_train/llama_n_ctx_train/g; s/llama_vocab_get_add_bos(vocab)/llama_add_bos_token(vocab)/' \
    -e 's/llama_vocab_bos(vocab)/llama_token_bos(vocab)/; s/llama_vocab_eos(vocab)/llama_token_eos(vocab)/' \
    -e 's/^  cp.flash_attn = fa;$/  cp.flash_attn = fa;\n  cp.fused_up_gate = false; cp.rope_cache = false; cp.fused_mmad = false;/' \
    -e 's/llama.cpp c392e5094 (b4748), CPU, 1 thread; weft quant\/testdata refgen/ik_llama.cpp 8337e4cd3 (llama.cpp fork, no qwen3 in c392e5094), CPU, 1 thread, rope_cache\/fused_up_gate\/fused_mmad off; weft quant\/testdata refgen/' \
    "$here/../quants/tools/refgen.cpp" > /tmp/refgen-ik.cpp
g++ -std=c++17 -O2 -I"$src/include" -I"$src/ggml/include" /tmp/refgen-ik.cpp -o "$out" \
    -L"$build/src" -L"$build/ggml/src" -lllama -lggml -Wl,-rpath,"$build/src:$build/ggml/src"
