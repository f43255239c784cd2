# weft — see README.md. `make test` is what CI runs.
GO        ?= go
BIN       := bin
# Packages cheap enough to run under the race detector on a 2-core machine.
RACE_PKGS := ./gguf/... ./graph/... ./runtime/...

.PHONY: device-build build test lint vet fmt-check unit race demo bench generate check-generated bench-kernels purego fuzz clean api

build:
	$(GO) build -o $(BIN)/ ./cmd/...

test: lint check-generated unit race purego

lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Vet on other systems too: Linux-only calls (fallocate, mount, mkfifo)
# must stay behind build tags.
vet:
	$(GO) vet ./...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=windows $(GO) vet ./...
	cd codegen && $(GO) vet ./...

# The Vulkan package runs whole models on lavapipe (several minutes on
# two cores): more than go test's default 10 minutes per package.
unit:
	$(GO) test -count=1 -timeout 30m ./...

race:
	$(GO) test -count=1 -short -race $(RACE_PKGS)

# The pure-Go kernels are the test oracle and the fallback on other CPUs:
# everything must also pass with the assembly switched off.
purego:
	$(GO) test -count=1 -short -tags purego ./...

demo: build
	@mkdir -p out
	$(BIN)/graphc compile testdata/stories260K.gguf -o out/stories260K.plan
	$(BIN)/graphrun out/stories260K.plan --prompt "Once upon a time" -n 200 --seed 42

# TinyLlama-shaped models of seven weight types (BF16 and IQ4_XS among
# them) and Qwen2.5-0.5B- and Phi-2-shaped Q4_0 models (BENCHES=SHAPE:TYPE,…
# picks others), weft beside llama.cpp when LLAMA_BENCH=/path/to/llama-bench
# is set and beside ik_llama.cpp (a third column, run with -rtr 1 -fa 1;
# IK_FLAGS="…" changes that) when IK_BENCH=/path/to/its/llama-bench is set
# (`make ik-build IK_SRC=…` builds one); writes docs/benchmarks.md and .svg.
# The report says how each peer was built: read from the CMakeCache.txt of
# its build folder, or LLAMA_BUILD="…" / IK_BUILD="…" (e.g. for a Makefile
# build). DEPTHS=4096,16384 adds rows measured with that many tokens in the
# KV cache (IK_DEPTH=pp+gp|gp|sweep|none: ik_llama.cpp's prefill at depth
# from prompts of D and D+512 tokens and decode by -gp D,N, decode only,
# both timed at depth by its llama-sweep-bench (beside IK_BENCH), or none;
# LLAMA_DEPTH=sweep|d|gp|none: llama.cpp's prefill and decode both timed
# at depth by weft-sweep-bench (the default: built here against the
# llama.cpp of LLAMA_BENCH, whose cmake folder sits beside its src/, or by
# `make llama-sweep-build LLAMA_DIR=…`), its -d (not in c392e5094), -gp, or
# none; LLAMA_FLAGS="-fa 1" for llama.cpp; WEFT_DEPTH_FLAGS="--flash-attn"
# for weft's rows at depth).
BENCHES ?=
DEPTHS ?=
LLAMA_DEPTH ?= sweep
IK_DEPTH ?= pp+gp
LLAMA_FLAGS ?=
WEFT_DEPTH_FLAGS ?=
IK_BENCH ?=
IK_FLAGS ?=
bench: build
	$(if $(and $(DEPTHS),$(LLAMA_BENCH),$(filter sweep,$(LLAMA_DEPTH))),internal/cmd/benchdoc/sweep/build-llama-sweep.sh $(abspath $(dir $(LLAMA_BENCH))../..))
	$(GO) run ./internal/cmd/benchdoc -bin $(BIN) -models out/bench -out docs/benchmarks.md $(if $(BENCHES),-benches $(BENCHES)) \
		$(if $(DEPTHS),-depths $(DEPTHS) -llama-depth $(LLAMA_DEPTH) -ik-depth $(IK_DEPTH)) $(if $(LLAMA_FLAGS),-llama-flags "$(LLAMA_FLAGS)") \
		$(if $(WEFT_DEPTH_FLAGS),-weft-depth-flags "$(WEFT_DEPTH_FLAGS)") \
		$(if $(IK_BENCH),-ik-bench $(IK_BENCH)) $(if $(IK_FLAGS),-ik-flags "$(IK_FLAGS)")

# ik_llama.cpp's llama-bench and llama-quantize for bench's third column:
# IK_SRC (a checkout or its URL) cloned at IK_COMMIT (default: its HEAD) and
# built with cmake -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON into
# IK_CACHE (default ~/.cache/weft/ik_llama.cpp-COMMIT, outside the
# repository; about 25 minutes on 2 cores); prints the path for IK_BENCH.
.PHONY: ik-build
ik-build:
	internal/cmd/benchdoc/build-ik.sh $(IK_SRC) $(IK_COMMIT)

# weft-sweep-bench (mainline llama.cpp's prefill and decode timed at depth,
# our program against its library) beside the llama-bench of LLAMA_DIR
# (holding src/ and build/, default ~/.cache/weft/llama.cpp-c392e5094).
LLAMA_DIR ?= $(HOME)/.cache/weft/llama.cpp-c392e5094
.PHONY: llama-sweep-build
llama-sweep-build:
	internal/cmd/benchdoc/sweep/build-llama-sweep.sh $(LLAMA_DIR)

# Serving load (graphrun bench-serve): weft's server on the TinyLlama-shaped
# Q4_0 model with 8 slots, beside llama-server -np 8 -cb on the same file
# when LLAMA_SERVER=/path/to/llama-server is set, measured in alternating
# rounds; writes out/bench-serve/serve.{txt,json,svg} (LEVELS, ROUNDS,
# MAX_TOKENS, PARALLEL: see internal/benchserve/run.sh).
.PHONY: bench-serve
bench-serve: build
	BIN=$(BIN) internal/benchserve/run.sh

# Kernel micro-benchmarks (GB/s, GFLOP/s).
bench-kernels:
	$(GO) test -run '^$$' -bench . ./quant ./backends/cpu/simd ./ops/ref

# The exported Go surface, checked by internal/apilist's test: run after a
# deliberate change to the library's API and commit api.txt.
api:
	$(GO) run ./internal/cmd/apilist -o api.txt

generate:
	$(GO) generate ./...

# Generated code is committed; regenerating must not change it.
check-generated: generate
	@git diff --exit-code --stat -- backends/cpu/simd shaders || { echo "generated files are stale: run make generate and commit"; exit 1; }

# Parsers under the fuzzer: GGUF files, plans with their side files, chat
# templates, graphrun chat's input and /load files, and the benchmark results
# peertable reads
# (FUZZTIME=1000000x for a fixed number of executions). A plan seed is
# 100+ KB, so minimising each new input is capped: uncapped, the default
# minute of minimisation per input stalls the run.
FUZZTIME ?= 60s
FUZZFLAGS = -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
fuzz:
	$(GO) test $(FUZZFLAGS) -fuzz FuzzParse ./gguf
	$(GO) test $(FUZZFLAGS) -fuzz FuzzPlan ./runtime
	$(GO) test $(FUZZFLAGS) -fuzz FuzzTemplate ./chat/internal/jinja
	$(GO) test $(FUZZFLAGS) -fuzz FuzzParseRender ./chat
	$(GO) test $(FUZZFLAGS) -fuzz FuzzParseSaved ./cmd/graphrun
	$(GO) test $(FUZZFLAGS) -fuzz FuzzChatInput ./cmd/graphrun
	$(GO) test $(FUZZFLAGS) -fuzz FuzzReadResults ./internal/cmd/peertable

clean:
	rm -rf $(BIN)

# Binaries and fixtures for .ci/device.sh on the GPU machine (see that
# script): stripped tools and Vulkan test binaries in out/dev, the
# stories260K models, references and the llama vocabulary in out/shared.
device-build:
	@mkdir -p out/dev out/shared/models out/shared/tokenizer
	$(GO) build -ldflags="-s -w" -o out/dev/ ./cmd/...
	$(GO) test -c -ldflags="-s -w" -o out/dev/vulkan.test ./backends/vulkan
	$(GO) test -c -ldflags="-s -w" -o out/dev/shaders.test ./shaders
	$(GO) test -c -ldflags="-s -w" -o out/dev/vk.test ./backends/vulkan/internal/vk
	cp -r ../shared/reference out/shared/
	cp ../shared/models/stories260K*.gguf ../shared/models/README.md out/shared/models/
	cp ../shared/tokenizer/ggml-vocab-llama-spm.gguf out/shared/tokenizer/
