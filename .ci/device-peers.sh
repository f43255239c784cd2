#!/bin/bash
# The CUDA peers beside weft's Vulkan backend on the GPU machine, like for
# like (issue 19): llama.cpp and ik_llama.cpp built there from source and run
# with llama-bench on the same `graphc synth` files as `graphrun bench
# --backend vulkan`, in alternating rounds. ../shared/DEVICE.md says how the
# machine works; results: docs/benchmarks-vulkan.md ("Session 27").
#
# Here (never commit a peer's code: out/ is ignored):
#   make device-build
#   bash .ci/device-peers.sh pack llama ~/src/llama.cpp  # -> out/peers/llama.tar.xz
#   bash .ci/device-peers.sh pack ik ~/src/ik_llama.cpp  # -> out/peers/ik.tar.xz,
#                                  # and out/dev + out/shared -> out/peers/weft.tar.xz
# There, through the device tool with carry [".gl", "out/peers"] (64 MiB in
# all: out/dev alone is more, hence the archive):
#   bash .ci/device-peers.sh build ik     # starts the CUDA build detached
#   bash .ci/device-peers.sh wait ik 560  # polls; call again within the 30 s
#                                         # the machine stays warm
#   bash .ci/device-peers.sh bench ik     # ROUNDS (2) x TYPES (the four); $OUT/res.tar
# Back here: tar -xf res.tar -C DIR; go run ./internal/cmd/peertable DIR...
# Measured build times on the H200's 16 cores: llama.cpp c392e5094 2.5 min,
# ik_llama.cpp 8337e4cd3 about 13 min (llama-bench only).
set -u
peer=${2:-}
case "$peer" in
llama | ik) ;;
*) echo "usage: device-peers.sh pack|build|wait|bench llama|ik [ARG]" >&2; exit 2 ;;
esac
src=/tmp/peers/$peer
log=/tmp/peers/build-$peer.log
export PATH=$PATH:/usr/local/cuda/bin

pack() {
	local checkout=${1:?pack needs the peer checkout}
	set -o pipefail
	[ -d "$checkout" ] || { echo "device-peers.sh: $checkout is not a folder (give the $peer checkout)" >&2; exit 2; }
	[ -x out/dev/graphrun ] || { echo "device-peers.sh: run make device-build first" >&2; exit 2; }
	mkdir -p out/peers
	tar -C out -cf - dev shared | xz -T0 -6 > out/peers/weft.tar.xz || exit 1
	# The sources llama-bench needs; the server's web assets and models are not.
	tar -C "$checkout" --exclude='examples/server/public*' --exclude='examples/server/webui' \
		--exclude='*.gguf' --exclude=.git -cf - \
		$(cd "$checkout" && ls -d CMakeLists.txt cmake ggml src include common examples gguf-py vendor pocs 2>/dev/null) |
		xz -T0 -6 > out/peers/$peer.tar.xz || { rm -f out/peers/$peer.tar.xz; exit 1; }
	echo "out/peers/$peer.tar.xz: $(du -h out/peers/$peer.tar.xz | cut -f1) from $(git -C "$checkout" rev-parse --short=9 HEAD 2>/dev/null)"
}

build() {
	mkdir -p $src && tar -xJf out/peers/$peer.tar.xz -C $src
	which nvcc cmake ninja || exit 1
	cd $src && setsid nohup sh -c 'cmake -B build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF && cmake --build build --target llama-bench -j$(nproc); echo "build rc=$?"' > $log 2>&1 < /dev/null &
	sleep 5; tail -3 $log
}

wait_build() {
	local end=$(($(date +%s) + ${1:-500}))
	while [ "$(date +%s)" -lt $end ] && ! grep -q "build rc=" $log; do sleep 10; done
	tail -3 $log; ls -la $src/build/bin/llama-bench
}

# Alternates the peer's llama-bench (flash attention on, as the issue's
# anchors) and graphrun bench on each file; both report per-repetition
# figures, so medians can be taken (llama-bench's avg_ts includes ik's slow
# first repetition).
bench() {
	for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
	tar -xJf out/peers/weft.tar.xz -C out
	[ -e ../shared ] || ln -s $PWD/out/shared ../shared
	local B=$PWD/out/dev lb=$src/build/bin/llama-bench res=/tmp/peers/res-$peer
	mkdir -p /tmp/m $res
	for t in ${TYPES:-q4_0 q4_k_m q8_0 f16}; do
		$B/graphc synth --shape tinyllama-1.1b --type $t -o /tmp/m/$t.gguf > /dev/null 2>&1 || { echo "graphc synth $t failed" >&2; exit 1; }
		timeout 60 $B/graphrun bench /tmp/m/$t.gguf --backend vulkan -p 512 -n 16 -r 1 > /dev/null 2>&1 # untimed: pipelines, driver cache
	done
	for r in $(seq ${ROUNDS:-2}); do
		for t in ${TYPES:-q4_0 q4_k_m q8_0 f16}; do
			$lb -m /tmp/m/$t.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 5 -o json > $res/$peer-$t-r$r.json 2> /dev/null
			timeout 90 $B/graphrun bench /tmp/m/$t.gguf --backend vulkan -p 512 -n 128 -r 5 --bandwidth --json > $res/weft-$t-r$r.json 2> /dev/null
			echo "== $t round $r: $peer $(grep -o '"avg_ts": [0-9.]*' $res/$peer-$t-r$r.json | tr '\n' ' ')"
			echo "   weft (pp, tg, GB/s): $(grep -o '"median": [0-9.]*' $res/weft-$t-r$r.json | tr '\n' ' ')"
		done
	done
	tar -cf $OUT/res.tar -C $res .
}

case "${1:-}" in
pack) pack "${3:-}" ;;
build) build ;;
wait) wait_build "${3:-500}" ;;
bench) bench ;;
*) echo "usage: device-peers.sh pack|build|wait|bench llama|ik [ARG]" >&2; exit 2 ;;
esac
