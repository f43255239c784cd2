#!/bin/sh
# Builds weft-sweep-bench (prefill and decode timed at depth, see its
# source) against a llama.cpp build, beside that build's llama-bench:
#   internal/cmd/benchdoc/sweep/build-llama-sweep.sh LLAMA_DIR
# LLAMA_DIR holds src/ (the checkout) and build/ (its cmake build, as
# ~/.cache/weft/llama.cpp-COMMIT has them). Prints the binary's path.
set -eu
dir=${1:?usage: build-llama-sweep.sh LLAMA_DIR (holding src/ and build/)}
here=$(cd "$(dirname "$0")" && pwd)
bin="$dir/build/bin"
[ -f "$bin/libllama.so" ] || { echo "build-llama-sweep.sh: no $bin/libllama.so: build llama.cpp first (make bench's README section)" >&2; exit 1; }
${CXX:-c++} -O2 -std=c++17 -o "$bin/weft-sweep-bench" "$here/weft-sweep-bench.cpp" \
	-I"$dir/src/include" -I"$dir/src/ggml/include" -L"$bin" -lllama -lggml -lggml-cpu -lggml-base -Wl,-rpath,"$bin"
echo "$bin/weft-sweep-bench"
