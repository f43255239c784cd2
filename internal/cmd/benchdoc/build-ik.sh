#!/bin/sh
# build-ik.sh CHECKOUT [COMMIT]: builds ik_llama.cpp's llama-bench,
# llama-quantize and llama-sweep-bench (benchdoc -ik-depth sweep) for
# `make bench`'s third column, the way issue 20 fixes:
# a clone of CHECKOUT (a local ik_llama.cpp checkout or its URL) at COMMIT
# (default: CHECKOUT's HEAD), configured with
#   cmake -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF
# and built into a cache folder outside the repository (never commit its
# code): $IK_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/weft/ik_llama.cpp-COMMIT,
# holding src/ and build/. A finished build there is reused. About 25
# minutes on 2 cores (JOBS=N sets the parallel jobs). Prints the llama-bench
# path to give as IK_BENCH:
#   make bench IK_BENCH=$(internal/cmd/benchdoc/build-ik.sh ~/src/ik_llama.cpp)
set -eu
checkout=${1:?usage: build-ik.sh CHECKOUT [COMMIT]   (CHECKOUT: an ik_llama.cpp checkout or URL)}
commit=${2:-$(git -C "$checkout" rev-parse HEAD 2>/dev/null || git ls-remote "$checkout" HEAD | cut -f1)}
[ -n "$commit" ] || { echo "build-ik.sh: cannot tell the commit of $checkout; give it as the second argument" >&2; exit 2; }
short=$(printf %.9s "$commit")
cache=${IK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weft/ik_llama.cpp-$short}
cache=$(realpath -m "$cache")
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || true)
if [ -n "$repo" ]; then
	case "$cache/" in
	"$(realpath -m "$repo")"/*)
		echo "build-ik.sh: $cache is inside the repository $repo; set IK_CACHE to a folder outside it" >&2
		exit 2
		;;
	esac
fi
bin=$cache/build/bin
if [ -x "$bin/llama-bench" ] && [ -x "$bin/llama-quantize" ] && [ -x "$bin/llama-sweep-bench" ]; then
	echo "$bin/llama-bench"
	exit 0
fi
if [ ! -d "$cache/src/.git" ]; then
	git clone --quiet --no-checkout "$checkout" "$cache/src" >&2
	# The two targets need neither the vocabulary test models nor the
	# server's prebuilt web pages (large files that a partial mirror may lack).
	git -C "$cache/src" sparse-checkout set --no-cone '/*' '!/models/*.gguf' '!/examples/server/public*/' '!/examples/server/webui/' >&2
fi
git -C "$cache/src" -c advice.detachedHead=false checkout --quiet "$commit" >&2
cmake -S "$cache/src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF >&2
cmake --build "$cache/build" --target llama-bench llama-quantize llama-sweep-bench -j "${JOBS:-$(nproc)}" >&2
echo "$bin/llama-bench"
