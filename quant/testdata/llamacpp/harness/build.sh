#!/bin/sh
# build.sh: the harness twice, ISO C (no FP contraction) in ., GNU C -O3 (GCC contracts a*b+c into FMA) in gnu/
set -e
I="-I/work/llama.cpp/ggml/include -I/work/llama.cpp/ggml/src -I/work/llama.cpp/ggml/src/ggml-cpu"
S=/work/llama.cpp/ggml/src
gcc -std=c11 -O2 -march=native -c $I $S/ggml-quants.c -o ggml-quants.o
gcc -std=c11 -O2 -march=native -c $I $S/ggml-cpu/ggml-cpu-quants.c -o ggml-cpu-quants.o
gcc -std=c11 -O2 -march=native $I harness.c stubs.c ggml-quants.o ggml-cpu-quants.o -lm -o harness
mkdir -p gnu
gcc -std=gnu11 -O3 -DNDEBUG -march=native -c $I $S/ggml-quants.c -o gnu/ggml-quants.o
gcc -std=gnu11 -O3 -DNDEBUG -march=native -c $I $S/ggml-cpu/ggml-cpu-quants.c -o gnu/ggml-cpu-quants.o
gcc -std=gnu11 -O3 -march=native $I harness.c stubs.c gnu/ggml-quants.o gnu/ggml-cpu-quants.o -lm -o gnu/harness
