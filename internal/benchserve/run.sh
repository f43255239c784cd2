#!/usr/bin/env bash
# make bench-serve: weft's server, and llama-server when LLAMA_SERVER names
# one, on the same model under the same load, measured by graphrun
# bench-serve in alternating rounds. Writes OUT/serve.{txt,json,svg}.
# Everything stays on 127.0.0.1; both servers are stopped on exit.
set -euo pipefail
BIN=${BIN:-bin}
MODEL=${MODEL:-out/bench/tinyllama-1.1b-q4_0.gguf}
OUT=${OUT:-out/bench-serve}
LEVELS=${LEVELS:-1,2,4,8,16}
ROUNDS=${ROUNDS:-2}
REQUESTS=${REQUESTS:-0}      # per level and round; 0: 2 × the level, at least 4
MAX_TOKENS=${MAX_TOKENS:-64}
PARALLEL=${PARALLEL:-8}
SLOT_CTX=${SLOT_CTX:-512}    # per slot (llama-server's -c is all slots together)
THREADS=${THREADS:-$(nproc)}
LLAMA_SERVER=${LLAMA_SERVER:-}
WEFT_PORT=${WEFT_PORT:-18080}
LLAMA_PORT=${LLAMA_PORT:-18081}
# Commands put before the servers and the client, e.g. SERVER_PREFIX="taskset -c 0,1"
# CLIENT_PREFIX="taskset -c 2" on a bigger machine, to give the servers two quiet cores.
SERVER_PREFIX=${SERVER_PREFIX:-}
CLIENT_PREFIX=${CLIENT_PREFIX:-}

mkdir -p "$OUT" "$(dirname "$MODEL")"
if [ ! -f "$MODEL" ]; then
	echo "synthesising $MODEL"
	"$BIN/graphc" synth -o "$MODEL" --shape tinyllama-1.1b --type q4_0
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

# healthy PORT: /health answers 200 (bash's /dev/tcp: no curl needed).
healthy() {
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null || return 1
	printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	read -r line <&3 || true
	exec 3<&-
	[[ $line == *" 200 "* ]]
}

# wait_ready PORT LOG: until /health answers 200 (llama-server answers 503
# while loading), or the server has died.
wait_ready() {
	for _ in $(seq 1 600); do
		if healthy "$1"; then return 0; fi
		if ! kill -0 "${pids[-1]}" 2>/dev/null; then echo "server exited:"; tail -20 "$2"; return 1; fi
		sleep 0.5
	done
	echo "$1 not ready after 5 minutes"; return 1
}

$SERVER_PREFIX "$BIN/graphrun" serve "$MODEL" --host 127.0.0.1 --port "$WEFT_PORT" --parallel "$PARALLEL" --ctx "$SLOT_CTX" \
	--threads "$THREADS" >"$OUT/weft.log" 2>&1 &
pids+=($!)
wait_ready "$WEFT_PORT" "$OUT/weft.log"
urls=("http://127.0.0.1:$WEFT_PORT") labels=weft
if [ -n "$LLAMA_SERVER" ]; then
	$SERVER_PREFIX "$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$LLAMA_PORT" -np "$PARALLEL" -cb -c $((PARALLEL * SLOT_CTX)) \
		-t "$THREADS" -tb "$THREADS" >"$OUT/llama-server.log" 2>&1 &
	pids+=($!)
	wait_ready "$LLAMA_PORT" "$OUT/llama-server.log"
	urls+=("http://127.0.0.1:$LLAMA_PORT") labels=weft,llama-server
fi
$CLIENT_PREFIX "$BIN/graphrun" bench-serve "${urls[@]}" --labels "$labels" --concurrency "$LEVELS" --rounds "$ROUNDS" \
	--requests "$REQUESTS" --slots "$PARALLEL" --max-tokens "$MAX_TOKENS" --svg "$OUT/serve.svg" --json "$OUT/serve.json" | tee "$OUT/serve.txt"
