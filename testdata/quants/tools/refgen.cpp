// refgen: llama.cpp reference logits in the format of ../shared/reference
// (README there), through llama.h only. Ours, not llama.cpp code.
// usage: refgen MODEL.gguf PROMPT_FILE N KV ROWS(all|last K) OUT_PREFIX [fa]
// KV is the cache type of K and V (f16, f32, q8_0, q4_0; llama.cpp's -ctk/-ctv), or K:V for
// different types (q8_0:f16); a trailing "fa" switches flash attention on (llama.cpp's -fa).
// writes OUT_PREFIX.json and OUT_PREFIX.logits.f32 (the prompt rows ROWS asks for).
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

int main(int argc, char **argv) {
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
