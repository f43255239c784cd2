// fagen: llama.cpp's CPU flash attention (ggml_flash_attn_ext) on fixed
// inputs, for ops/ref's bit-level check (TestFlashAttentionLlamaCpp).
// Ours, not llama.cpp code; linked against the c392e5094 objects.
// usage: fagen OUTDIR   writes OUTDIR/CASE.f32 for every case below.
#include "ggml.h"
#include "ggml-cpu.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The cases; the Go test lists the same ones.
struct fcase {
  const char *name;
  enum ggml_type kt, vt;
  int hd, heads, kv_heads, n_tok, n_kv, window;
  float scale, softcap;
  unsigned seed;
};

static const struct fcase cases[] = {
    {"f16-hd64", GGML_TYPE_F16, GGML_TYPE_F16, 64, 4, 2, 3, 200, 0, 0.125f, 0, 1},
    {"f16-hd8-window", GGML_TYPE_F16, GGML_TYPE_F16, 8, 8, 4, 5, 40, 9, 0.35355339f, 0, 2},
    {"f16-hd96-softcap", GGML_TYPE_F16, GGML_TYPE_F16, 96, 2, 1, 1, 300, 0, 0.1f, 1.5f, 3},
    {"q8_0-hd64", GGML_TYPE_Q8_0, GGML_TYPE_Q8_0, 64, 4, 1, 2, 150, 0, 0.125f, 0, 4},
    {"q4_0-hd128-window", GGML_TYPE_Q4_0, GGML_TYPE_Q4_0, 128, 4, 2, 2, 100, 30, 0.08838835f, 0, 5},
    {"q8_0-f16-hd32", GGML_TYPE_Q8_0, GGML_TYPE_F16, 32, 2, 2, 4, 70, 0, 0.17677669f, 0, 6},
    {"q4_0-q8_0-hd96", GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, 96, 3, 1, 3, 90, 0, 0.10206207f, 0, 7},
};

// next is xorshift32; value returns a float in [-amp, amp) that is exact
// in float32 (24 random bits scaled by a power of two).
static unsigned next(unsigned *s) {
  unsigned x = *s;
  x ^= x << 13; x ^= x >> 17; x ^= x << 5;
  return *s = x;
}
static float value(unsigned *s, float amp) {
  return (float)((int)(next(s) >> 8) - (1 << 23)) * (amp / 8388608.0f);
}

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: fagen OUTDIR\n"); return 2; }
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const struct fcase *c = &cases[ci];
    struct ggml_init_params ip = {256 << 20, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    int W = c->kv_heads * c->hd, pos0 = c->n_kv - c->n_tok;
    unsigned s = c->seed;
    struct ggml_tensor *q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, c->hd, c->heads, c->n_tok);
    struct ggml_tensor *k = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, W, c->n_kv);
    struct ggml_tensor *v = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, W, c->n_kv);
    for (int i = 0; i < c->hd * c->heads * c->n_tok; i++) ((float *)q->data)[i] = value(&s, 1);
    for (int i = 0; i < W * c->n_kv; i++) ((float *)k->data)[i] = value(&s, 2);
    for (int i = 0; i < W * c->n_kv; i++) ((float *)v->data)[i] = value(&s, 1);
    // The caches as llama.cpp fills them (ggml_cpy into the cache type),
    // viewed per head as llm_build_kqv does with -fa.
    struct ggml_tensor *kc = ggml_new_tensor_1d(ctx, c->kt, (int64_t)W * c->n_kv);
    struct ggml_tensor *vc = ggml_new_tensor_1d(ctx, c->vt, (int64_t)W * c->n_kv);
    struct ggml_tensor *kcpy = ggml_cpy(ctx, k, ggml_view_1d(ctx, kc, (int64_t)W * c->n_kv, 0));
    struct ggml_tensor *vcpy = ggml_cpy(ctx, v, ggml_view_1d(ctx, vc, (int64_t)W * c->n_kv, 0));
    struct ggml_tensor *kv3 = ggml_view_3d(ctx, kc, c->hd, c->n_kv, c->kv_heads, ggml_row_size(c->kt, W), ggml_row_size(c->kt, c->hd), 0);
    struct ggml_tensor *vv3 = ggml_view_3d(ctx, vc, c->hd, c->n_kv, c->kv_heads, ggml_row_size(c->vt, W), ggml_row_size(c->vt, c->hd), 0);
    int padded = GGML_PAD(c->n_tok, GGML_KQ_MASK_PAD);
    struct ggml_tensor *mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, c->n_kv, padded);
    for (int t = 0; t < padded; t++) {
      for (int p = 0; p < c->n_kv; p++) {
        int pos = pos0 + t;
        int seen = t < c->n_tok && p <= pos && (c->window == 0 || p > pos - c->window);
        ((ggml_fp16_t *)mask->data)[t * c->n_kv + p] = ggml_fp32_to_fp16(seen ? 0.0f : -INFINITY);
      }
    }
    struct ggml_tensor *qp = ggml_permute(ctx, q, 0, 2, 1, 3);
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, qp, kv3, vv3, mask, c->scale, 0.0f, c->softcap);
    ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, kcpy);
    ggml_build_forward_expand(gf, vcpy);
    ggml_build_forward_expand(gf, out);
    if (ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS) { fprintf(stderr, "compute failed\n"); return 1; }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.f32", argv[1], c->name);
    FILE *f = fopen(path, "wb");
    fwrite(out->data, 4, (size_t)c->hd * c->heads * c->n_tok, f);
    fclose(f);
    ggml_free(ctx);
  }
  return 0;
}
