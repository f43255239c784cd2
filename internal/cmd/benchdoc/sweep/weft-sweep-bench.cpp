// weft-sweep-bench times prefill and decode at depth on mainline
// llama.cpp, whose llama-bench (c392e5094, February 2025) has no test at
// depth: its -pg times a prompt and its generation together. benchdoc
// runs it as it runs ik_llama.cpp's llama-sweep-bench (-llama-depth
// sweep), so this program takes the subset of that tool's command line
// benchdoc passes and prints the same JSONL row:
//
//   weft-sweep-bench -m MODEL -t THREADS -c DEPTH+P -b P -ub P -n N
//       --sweep-stride DEPTH/P --output-format jsonl [-fa 0|1]
//
// It fills the KV cache with DEPTH random tokens in batches of P
// (untimed), then times one batch of P tokens at positions DEPTH… (the
// prefill at depth), removes them from the cache, and times N tokens
// decoded one at a time from position DEPTH, printing
//   {"n_kv": DEPTH, "speed_pp": P/t, "speed_tg": N/t}
// Written for weft against llama.h's public API; built by
// build-llama-sweep.sh beside the llama-bench it complements.
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct options {
    std::string model;
    int threads = 2, ctx = 0, batch = 512, ubatch = 512, gen = 128, stride = 0;
    bool flash = false;
};

[[noreturn]] void usage(const char * why) {
    std::fprintf(stderr, "weft-sweep-bench: %s\nusage: weft-sweep-bench -m MODEL -t THREADS -c DEPTH+P -b P -ub P -n N "
                         "--sweep-stride DEPTH/P --output-format jsonl [-fa 0|1]\n", why);
    std::exit(2);
}

int number(const char * flag, const char * v) {
    char * end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || n < 0 || n > 1 << 24) {
        usage((std::string("bad value for ") + flag + ": " + v).c_str());
    }
    return int(n);
}

options parse(int argc, char ** argv) {
    options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc) {
            usage(("missing value after " + a).c_str());
        }
        const char * v = argv[++i];
        if (a == "-m") {
            o.model = v;
        } else if (a == "-t") {
            o.threads = number("-t", v);
        } else if (a == "-c") {
            o.ctx = number("-c", v);
        } else if (a == "-b") {
            o.batch = number("-b", v);
        } else if (a == "-ub") {
            o.ubatch = number("-ub", v);
        } else if (a == "-n") {
            o.gen = number("-n", v);
        } else if (a == "--sweep-stride") {
            o.stride = number("--sweep-stride", v);
        } else if (a == "-fa") {
            o.flash = number("-fa", v) != 0;
        } else if (a == "--output-format") {
            if (std::string(v) != "jsonl") {
                usage("only --output-format jsonl is written");
            }
        } else {
            usage(("unknown flag " + a).c_str());
        }
    }
    if (o.model.empty() || o.threads < 1 || o.ubatch < 1 || o.batch != o.ubatch || o.gen < 1) {
        usage("need -m, -t ≥ 1, -n ≥ 1 and -b equal to -ub");
    }
    int depth = o.ctx - o.ubatch;
    if (depth <= 0 || depth % o.ubatch != 0 || (o.stride != 0 && o.stride != depth / o.ubatch)) {
        usage("-c must be DEPTH+P with DEPTH a positive multiple of P (and --sweep-stride DEPTH/P)");
    }
    return o;
}

// decode runs tokens at positions pos… of sequence 0 and waits for the
// result; only the last token's logits are asked for, as a prompt's.
void decode(llama_context * ctx, llama_batch & b, const std::vector<llama_token> & toks, int pos) {
    b.n_tokens = int32_t(toks.size());
    for (size_t i = 0; i < toks.size(); i++) {
        b.token[i] = toks[i];
        b.pos[i] = pos + int(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i + 1 == toks.size();
    }
    if (llama_decode(ctx, b) != 0) {
        std::fprintf(stderr, "weft-sweep-bench: llama_decode failed at position %d\n", pos);
        std::exit(1);
    }
    llama_synchronize(ctx);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void quiet(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        std::fputs(text, stderr);
    }
}

} // namespace

int main(int argc, char ** argv) {
    options o = parse(argc, argv);
    const int depth = o.ctx - o.ubatch;
    llama_log_set(quiet, nullptr);
    ggml_backend_load_all();
    llama_backend_init();
    llama_model * model = llama_model_load_from_file(o.model.c_str(), llama_model_default_params());
    if (model == nullptr) {
        std::fprintf(stderr, "weft-sweep-bench: cannot load %s\n", o.model.c_str());
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = uint32_t(o.ctx);
    cp.n_batch = cp.n_ubatch = uint32_t(o.ubatch);
    cp.n_threads = cp.n_threads_batch = o.threads;
    cp.flash_attn = o.flash;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (ctx == nullptr) {
        std::fprintf(stderr, "weft-sweep-bench: cannot create a context of %d cells\n", o.ctx);
        return 1;
    }
    // A thread pool of the given size, as llama-bench attaches one (with
    // its default polling): without it each graph starts its threads anew.
    ggml_threadpool_params tpp = ggml_threadpool_params_default(o.threads);
    ggml_threadpool * pool = ggml_threadpool_new(&tpp);
    if (pool == nullptr) {
        std::fprintf(stderr, "weft-sweep-bench: cannot start %d threads\n", o.threads);
        return 1;
    }
    llama_attach_threadpool(ctx, pool, nullptr);
    const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> tok(0, vocab - 1);
    auto tokens = [&](int n) {
        std::vector<llama_token> t(n);
        for (auto & x : t) {
            x = tok(rng);
        }
        return t;
    };
    llama_batch b = llama_batch_init(o.ubatch, 0, 1);

    for (int pos = 0; pos < depth; pos += o.ubatch) { // the depth, untimed
        decode(ctx, b, tokens(o.ubatch), pos);
        std::fprintf(stderr, "\rweft-sweep-bench: filled %d of %d cells", pos + o.ubatch, depth);
    }
    std::fputc('\n', stderr);

    auto t0 = std::chrono::steady_clock::now(); // prefill of P tokens at depth
    decode(ctx, b, tokens(o.ubatch), depth);
    const double pp = o.ubatch / seconds_since(t0);
    llama_kv_cache_seq_rm(ctx, 0, depth, -1);

    decode(ctx, b, tokens(1), depth); // one untimed token: the one-token graph's first build
    llama_kv_cache_seq_rm(ctx, 0, depth, -1);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.gen; i++) {
        decode(ctx, b, tokens(1), depth + i);
    }
    const double tg = o.gen / seconds_since(t0);

    std::printf("{\"n_kv\": %d, \"speed_pp\": %.3f, \"speed_tg\": %.3f}\n", depth, pp, tg);
    llama_batch_free(b);
    llama_free(ctx);
    ggml_threadpool_free(pool);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
