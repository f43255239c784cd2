// refgen: llama.cpp reference logits in the format of ../shared/reference
// (README there), through llama.h only. Ours, not llama.cpp code.
// usage: refgen MODEL.gguf PROMPT_FILE N KV ROWS(all|last K) OUT_PREFIX [fa]
// KV is the cache type of K and V (f16, f32, q8_0, q4_0; llama.cpp's -ctk/-ctv), or K:V for
// different types (q8_0:f16); a trailing "fa" switches flash attention on (llama.cpp's -fa).
// writes OUT_PREFIX.json and OUT_PREFIX.logits.f32 (the prompt rows ROWS asks for).
//    or: refgen shift MODEL.gguf PROMPT_FILE N KV(f16|f32) N_CTX N_KEEP OUT_PREFIX [STEPS]
// greedy decoding through a small context with llama.cpp's context shift (see shift_main);
// writes OUT_PREFIX.json and OUT_PREFIX.logits.f32 (the logits of every greedy step, or of the
// comma-separated greedy steps STEPS).
#include "llama.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static std::string hex(const std::string &s) {
  static const char *d = "0123456789abcdef";
  std::string o;
  for (unsigned char c : s) { o += d[c >> 4]; o += d[c & 15]; }
  return o;
}
static std::string jstr(const std::string &s) {  // JSON string; invalid UTF-8 bytes become U+FFFD
  std::string o = "\"";
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] >> 6) == 2;
    if (!ok) { o += "\xef\xbf\xbd"; i++; continue; }
    if (len == 1) {
      if (c == '"') o += "\\\""; else if (c == '\\') o += "\\\\"; else if (c == '\n') o += "\\n";
      else if (c == '\t') o += "\\t"; else if (c == '\r') o += "\\r";
      else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; } else o += (char)c;
    } else o += s.substr(i, len);
    i += len;
  }
  return o + "\"";
}
static bool utf8ok(const std::string &s) { return jstr(s).find("\xef\xbf\xbd") == std::string::npos || s.find("\xef\xbf\xbd") != std::string::npos; }
static std::string num(double v) { char b[64]; snprintf(b, sizeof b, "%.9g", v); return b; }
static std::string piece(const llama_vocab *v, llama_token t, bool special) {
  char buf[256];
  int n = llama_token_to_piece(v, t, buf, sizeof buf, 0, special);
  return n < 0 ? std::string() : std::string(buf, n);
}
static int argmax(const float *l, int n) { int b = 0; for (int i = 1; i < n; i++) if (l[i] > l[b]) b = i; return b; }
static std::string topk(const float *l, int n) {
  std::vector<int> idx(n);
  for (int i = 0; i < n; i++) idx[i] = i;
  std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(), [&](int a, int b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  std::string o = "[";
  for (int k = 0; k < 5; k++) o += (k ? "," : "") + std::string("[") + std::to_string(idx[k]) + "," + num(l[idx[k]]) + "]";
  return o + "]";
}
static double lse(const float *l, int n) {
  double m = l[argmax(l, n)], s = 0;
  for (int i = 0; i < n; i++) s += std::exp((double)l[i] - m);
  return m + std::log(s);
}
static std::string sha256(const std::string &path) {
  std::string cmd = "sha256sum '" + path + "'";
  FILE *p = popen(cmd.c_str(), "r");
  char b[65] = {0};
  if (!p || fread(b, 1, 64, p) != 64) { fprintf(stderr, "sha256sum failed\n"); exit(1); }
  pclose(p);
  return b;
}

// cache_type reads a KV cache type name; it exits on any other.
static ggml_type cache_type(const std::string &s) {
  if (s == "f16") return GGML_TYPE_F16;
  if (s == "f32") return GGML_TYPE_F32;
  if (s == "q8_0") return GGML_TYPE_Q8_0;
  if (s == "q4_0") return GGML_TYPE_Q4_0;
  fprintf(stderr, "unknown KV cache type %s (want f16, f32, q8_0 or q4_0)\n", s.c_str());
  exit(2);
}

// shift_main: the prompt in one batch, then N greedy steps (raw argmax) in a context of N_CTX
// cells. Before a token is decoded at n_past, if n_past + 1 >= N_CTX the context is shifted as
// llama.cpp's examples/main and server do: n_discard = (n_past - N_KEEP) / 2,
// llama_kv_cache_seq_rm(0, N_KEEP, N_KEEP + n_discard), llama_kv_cache_seq_add(0, N_KEEP + n_discard,
// n_past, -n_discard), n_past -= n_discard. N_KEEP counts the BOS token (llama-cli's --keep K is
// K + 1 here). The K rotation happens inside the next llama_decode (llama_kv_cache_update).
static int shift_main(int argc, char **argv) {
  if (argc != 9 && argc != 10) { fprintf(stderr, "usage: refgen shift MODEL PROMPT_FILE N f16|f32 N_CTX N_KEEP OUT_PREFIX [STEPS]\n"); return 2; }
  std::string model_path = argv[2], out = argv[8];
  std::ifstream pf(argv[3], std::ios::binary);
  std::stringstream ss; ss << pf.rdbuf();
  std::string prompt = ss.str();
  int N = atoi(argv[4]);
  bool kvf32 = !strcmp(argv[5], "f32");
  int n_ctx = atoi(argv[6]), n_keep = atoi(argv[7]);

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model *model = llama_model_load_from_file(model_path.c_str(), mp);
  if (!model) { fprintf(stderr, "load failed\n"); return 1; }
  const llama_vocab *vocab = llama_model_get_vocab(model);
  int nv = llama_vocab_n_tokens(vocab);
  std::vector<llama_token> toks(prompt.size() + 16);
  int np = llama_tokenize(vocab, prompt.c_str(), prompt.size(), toks.data(), toks.size(), true, false);
  if (np < 0 || np + 1 >= n_ctx || n_keep > np) { fprintf(stderr, "tokenize failed or prompt/keep too long\n"); return 1; }
  toks.resize(np);

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = cp.n_ubatch = n_ctx;
  cp.n_threads = cp.n_threads_batch = 1;
  cp.flash_attn = false;
  cp.type_k = cp.type_v = kvf32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
  llama_context *ctx = llama_init_from_model(model, cp);
  if (!ctx) { fprintf(stderr, "context failed\n"); return 1; }
  if ((int)llama_n_ctx(ctx) != n_ctx) { fprintf(stderr, "context of %d, asked %d\n", llama_n_ctx(ctx), n_ctx); return 1; }

  llama_batch b = llama_batch_init(np, 0, 1);
  for (int i = 0; i < np; i++) {
    b.token[i] = toks[i]; b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = i == np - 1;
  }
  b.n_tokens = np;
  if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
  std::vector<float> cur(llama_get_logits_ith(ctx, np - 1), llama_get_logits_ith(ctx, np - 1) + nv);
  int n_past = np;
  std::vector<int> greedy, positions;
  std::vector<float> glog;
  std::string shifts = "[";
  int nshift = 0;
  for (int g = 0; g < N; g++) {
    glog.insert(glog.end(), cur.begin(), cur.end());
    int t = argmax(cur.data(), nv);
    greedy.push_back(t);
    if (g == N - 1) break;
    if (n_past + 1 >= n_ctx) {
      const int n_discard = (n_past - n_keep) / 2;
      if (!llama_kv_cache_seq_rm(ctx, 0, n_keep, n_keep + n_discard)) { fprintf(stderr, "seq_rm failed\n"); return 1; }
      llama_kv_cache_seq_add(ctx, 0, n_keep + n_discard, n_past, -n_discard);
      shifts += std::string(nshift++ ? "," : "") + "{\"step\":" + std::to_string(g) + ",\"n_past\":" + std::to_string(n_past) +
                ",\"n_keep\":" + std::to_string(n_keep) + ",\"n_discard\":" + std::to_string(n_discard) + "}";
      n_past -= n_discard;
    }
    positions.push_back(n_past);
    llama_batch one = llama_batch_init(1, 0, 1);
    one.token[0] = t; one.pos[0] = n_past; one.n_seq_id[0] = 1; one.seq_id[0][0] = 0; one.logits[0] = true; one.n_tokens = 1;
    if (llama_decode(ctx, one)) { fprintf(stderr, "decode failed\n"); return 1; }
    llama_batch_free(one);
    n_past++;
    memcpy(cur.data(), llama_get_logits_ith(ctx, 0), nv * 4);
  }
  std::vector<int> rows;  // the greedy steps whose logits are stored
  if (argc == 10) {
    for (const char *p = argv[9]; *p;) { rows.push_back(atoi(p)); while (*p && *p != ',') p++; if (*p) p++; }
  } else {
    for (int g = 0; g < N; g++) rows.push_back(g);
  }
  std::string lpath = out + ".logits.f32";
  FILE *lf = fopen(lpath.c_str(), "wb");
  for (int g : rows) {
    if (g < 0 || g >= N) { fprintf(stderr, "step %d outside 0..%d\n", g, N - 1); return 1; }
    fwrite(&glog[(size_t)g * nv], 4, nv, lf);
  }
  fclose(lf);

  auto ints = [](const std::vector<int> &v) { std::string o = "["; for (size_t i = 0; i < v.size(); i++) o += (i ? "," : "") + std::to_string(v[i]); return o + "]"; };
  std::string text, gt = "[", gl = "[";
  for (size_t g = 0; g < greedy.size(); g++) {
    text += piece(vocab, greedy[g], false);
    gt += (g ? "," : "") + topk(&glog[g * nv], nv);
    gl += (g ? "," : "") + num(lse(&glog[g * nv], nv));
  }
  std::string base = model_path.substr(model_path.find_last_of('/') + 1);
  std::string lbase = lpath.substr(lpath.find_last_of('/') + 1);
  std::string j = "{\n";
  auto kv = [&](const std::string &k, const std::string &v, bool last = false) { j += "  " + jstr(k) + ": " + v + (last ? "\n" : ",\n"); };
  kv("model", jstr(base));
  kv("model_sha256", jstr(sha256(model_path)));
  kv("prompt", jstr(prompt));
  kv("n_prompt", std::to_string(np));
  kv("prompt_tokens", ints(std::vector<int>(toks.begin(), toks.end())));
  kv("n_vocab", std::to_string(nv));
  kv("n_ctx", std::to_string(n_ctx));
  kv("n_keep", std::to_string(n_keep));
  kv("shift_rule", jstr("before decoding at n_past: if n_past + 1 >= n_ctx, n_discard = (n_past - n_keep) / 2; seq_rm(0, n_keep, n_keep + n_discard); seq_add(0, n_keep + n_discard, n_past, -n_discard); n_past -= n_discard"));
  kv("shifts", shifts + "]");
  kv("n_greedy", std::to_string(N));
  kv("greedy_tokens", ints(greedy));
  kv("greedy_positions", ints(positions));
  kv("greedy_text", jstr(text));
  kv("greedy_topk", gt + "]");
  kv("greedy_logsumexp", gl + "]");
  kv("logits_file", jstr(lbase));
  kv("logits_dtype", jstr("float32"));
  kv("logits_shape", "[" + std::to_string(rows.size()) + "," + std::to_string(nv) + "]");
  kv("logits_rows", jstr("greedy steps"));
  kv("logits_steps", ints(rows));
  kv("logits_sha256", jstr(sha256(lpath)));
  kv("kv_cache_type", jstr(kvf32 ? "f32" : "f16"));
  kv("n_batch", std::to_string(cp.n_batch));
  kv("n_threads", "1");
  kv("flash_attn", "false");
  kv("generator", jstr("llama.cpp c392e5094 (b4748), CPU, 1 thread; weft refgen shift"), true);
  j += "}\n";
  std::ofstream(out + ".json") << j;
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "shift")) return shift_main(argc, argv);
  if (argc != 7 && !(argc == 8 && !strcmp(argv[7], "fa"))) {
    fprintf(stderr, "usage: refgen MODEL PROMPT_FILE N f16|f32|q8_0|q4_0|K:V all|lastK OUT_PREFIX [fa]\n");
    return 2;
  }
  bool fa = argc == 8;
  std::string model_path = argv[1], out = argv[6];
  std::ifstream pf(argv[2], std::ios::binary);
  std::stringstream ss; ss << pf.rdbuf();
  std::string prompt = ss.str();
  int N = atoi(argv[3]);
  std::string kvarg = argv[4];
  std::string kname = kvarg.substr(0, kvarg.find(':'));
  std::string vname = kvarg.find(':') == std::string::npos ? kname : kvarg.substr(kvarg.find(':') + 1);
  ggml_type type_k = cache_type(kname), type_v = cache_type(vname);
  std::string rows = argv[5];

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model *model = llama_model_load_from_file(model_path.c_str(), mp);
  if (!model) { fprintf(stderr, "load failed\n"); return 1; }
  const llama_vocab *vocab = llama_model_get_vocab(model);
  int nv = llama_vocab_n_tokens(vocab);

  std::vector<llama_token> toks(prompt.size() + 16);
  int np = llama_tokenize(vocab, prompt.c_str(), prompt.size(), toks.data(), toks.size(), true, false);
  if (np < 0) { fprintf(stderr, "tokenize failed\n"); return 1; }
  toks.resize(np);

  llama_context_params cp = llama_context_default_params();
  int n_ctx_train = llama_model_n_ctx_train(model);
  cp.n_ctx = std::min(2048, n_ctx_train);
  cp.n_batch = cp.n_ubatch = std::max(512, np);
  cp.n_threads = cp.n_threads_batch = 1;
  cp.flash_attn = fa;
  cp.type_k = type_k;
  cp.type_v = type_v;
  llama_context *ctx = llama_init_from_model(model, cp);
  if (!ctx) { fprintf(stderr, "context failed\n"); return 1; }

  llama_batch b = llama_batch_init(np, 0, 1);
  for (int i = 0; i < np; i++) {
    b.token[i] = toks[i]; b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = true;
  }
  b.n_tokens = np;
  if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
  std::vector<float> plog((size_t)np * nv);
  for (int i = 0; i < np; i++) memcpy(&plog[(size_t)i * nv], llama_get_logits_ith(ctx, i), nv * 4);

  std::vector<int> greedy;
  std::vector<std::vector<float>> glog;
  std::vector<float> cur(plog.end() - nv, plog.end());
  for (int g = 0; g < N; g++) {
    glog.push_back(cur);
    int t = argmax(cur.data(), nv);
    greedy.push_back(t);
    if (g == N - 1) break;
    llama_batch one = llama_batch_init(1, 0, 1);
    one.token[0] = t; one.pos[0] = np + g; one.n_seq_id[0] = 1; one.seq_id[0][0] = 0; one.logits[0] = true; one.n_tokens = 1;
    if (llama_decode(ctx, one)) { fprintf(stderr, "decode failed\n"); return 1; }
    llama_batch_free(one);
    memcpy(cur.data(), llama_get_logits_ith(ctx, 0), nv * 4);
  }

  int first = 0, nrows = np;
  std::string rows_desc = "all";
  if (rows.rfind("last", 0) == 0) {
    int k = std::min(np, atoi(rows.c_str() + 4));
    first = np - k; nrows = k; rows_desc = "last " + std::to_string(k);
  }
  std::string lpath = out + ".logits.f32";
  FILE *lf = fopen(lpath.c_str(), "wb");
  fwrite(&plog[(size_t)first * nv], 4, (size_t)nrows * nv, lf);
  fclose(lf);

  std::string base = model_path.substr(model_path.find_last_of('/') + 1);
  std::string lbase = lpath.substr(lpath.find_last_of('/') + 1);
  std::string text, text_special, pieces = "[", pieces_hex = "[", ppieces = "[";
  for (size_t g = 0; g < greedy.size(); g++) {
    std::string p = piece(vocab, greedy[g], false);
    text += p; text_special += piece(vocab, greedy[g], true);
    pieces += (g ? "," : "") + jstr(p); pieces_hex += (g ? "," : "") + jstr(hex(p));
  }
  for (int i = 0; i < np; i++) ppieces += (i ? "," : "") + jstr(piece(vocab, toks[i], true));
  std::string j = "{\n";
  auto kv = [&](const std::string &k, const std::string &v, bool last = false) { j += "  " + jstr(k) + ": " + v + (last ? "\n" : ",\n"); };
  auto ints = [](const std::vector<int> &v) { std::string o = "["; for (size_t i = 0; i < v.size(); i++) o += (i ? "," : "") + std::to_string(v[i]); return o + "]"; };
  kv("model", jstr(base));
  kv("model_sha256", jstr(sha256(model_path)));
  kv("prompt", jstr(prompt));
  kv("add_bos", llama_vocab_get_add_bos(vocab) ? "true" : "false");
  kv("add_special", "true");
  kv("parse_special", "false");
  kv("bos_token_id", std::to_string(llama_vocab_bos(vocab)));
  kv("eos_token_id", std::to_string(llama_vocab_eos(vocab)));
  kv("n_prompt", std::to_string(np));
  kv("prompt_tokens", ints(std::vector<int>(toks.begin(), toks.end())));
  kv("prompt_pieces", ppieces + "]");
  kv("n_vocab", std::to_string(nv));
  kv("n_greedy", std::to_string(N));
  kv("greedy_tokens", ints(greedy));
  kv("greedy_pieces", pieces + "]");
  kv("greedy_pieces_hex", pieces_hex + "]");
  kv("greedy_text", jstr(text));
  kv("greedy_text_hex", jstr(hex(text)));
  kv("greedy_text_utf8_valid", jstr(text).find("\xef\xbf\xbd") == std::string::npos ? "true" : "false");
  kv("greedy_text_special", jstr(text_special));
  std::string gt = "[", gl = "[", pt = "[", pl = "[";
  for (size_t g = 0; g < glog.size(); g++) { gt += (g ? "," : "") + topk(glog[g].data(), nv); gl += (g ? "," : "") + num(lse(glog[g].data(), nv)); }
  for (int i = 0; i < np; i++) { pt += (i ? "," : "") + topk(&plog[(size_t)i * nv], nv); pl += (i ? "," : "") + num(lse(&plog[(size_t)i * nv], nv)); }
  kv("greedy_topk", gt + "]");
  kv("greedy_logsumexp", gl + "]");
  kv("logits_file", jstr(lbase));
  kv("logits_dtype", jstr("float32"));
  kv("logits_shape", "[" + std::to_string(nrows) + "," + std::to_string(nv) + "]");
  kv("logits_rows", jstr(rows_desc));
  kv("logits_first_pos", std::to_string(first));
  kv("logits_sha256", jstr(sha256(lpath)));
  kv("topk", "5");
  kv("prompt_topk", pt + "]");
  kv("prompt_logsumexp", pl + "]");
  kv("kv_cache_type", jstr(kvarg));
  kv("n_ctx", std::to_string(cp.n_ctx));
  kv("n_ctx_train", std::to_string(n_ctx_train));
  kv("n_batch", std::to_string(cp.n_batch));
  kv("n_ubatch", std::to_string(cp.n_ubatch));
  kv("n_threads", "1");
  kv("flash_attn", fa ? "true" : "false");
  kv("generator", jstr("llama.cpp c392e5094 (b4748), CPU, 1 thread; weft quant/testdata refgen"), true);
  j += "}\n";
  std::ofstream(out + ".json") << j;
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
