// harness: quantize, dequantize and dot with llama.cpp's own ggml-quants.c and
// ggml-cpu-quants.c, to make golden files for weft's quant tests.
// usage: harness TYPE N_PER_ROW x.f32 a.f32 OUTPREFIX
// writes OUTPREFIX.q (quantize_TYPE of all rows, no imatrix), .deq
// (dequantize_row_TYPE of .q), .act (activation rows quantized to the
// vec-dot type by the CPU backend's from_float), .dot (one float per row:
// the CPU backend's vec_dot of the weight row and activation row).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "ggml.h"
#include "ggml-quants.h"
#include "ggml-cpu-quants.h"

typedef size_t (*qfn)(const float*, void*, int64_t, int64_t, const float*);
typedef void (*dqfn)(const void*, float*, int64_t);
typedef void (*rowq)(const float*, void*, int64_t);
typedef void (*dotfn)(int, float*, size_t, const void*, size_t, const void*, size_t, int);

struct ent { const char *name; qfn q; dqfn dq; rowq act; int actblk, actbytes; dotfn dot; int blk, bytes; int init; };

static struct ent tab[] = {
  {"Q4_0", quantize_q4_0, (dqfn)dequantize_row_q4_0, quantize_row_q8_0, 32, 34, ggml_vec_dot_q4_0_q8_0, 32, 18, 0},
  {"Q2_K", quantize_q2_K, (dqfn)dequantize_row_q2_K, quantize_row_q8_K, 256, 292, ggml_vec_dot_q2_K_q8_K, 256, 84, 0},
  {"Q3_K", quantize_q3_K, (dqfn)dequantize_row_q3_K, quantize_row_q8_K, 256, 292, ggml_vec_dot_q3_K_q8_K, 256, 110, 0},
  {"Q4_K", quantize_q4_K, (dqfn)dequantize_row_q4_K, quantize_row_q8_K, 256, 292, ggml_vec_dot_q4_K_q8_K, 256, 144, 0},
  {"Q5_K", quantize_q5_K, (dqfn)dequantize_row_q5_K, quantize_row_q8_K, 256, 292, ggml_vec_dot_q5_K_q8_K, 256, 176, 0},
  {"Q6_K", quantize_q6_K, (dqfn)dequantize_row_q6_K, quantize_row_q8_K, 256, 292, ggml_vec_dot_q6_K_q8_K, 256, 210, 0},
  {"IQ4_NL", quantize_iq4_nl, (dqfn)dequantize_row_iq4_nl, quantize_row_q8_0, 32, 34, ggml_vec_dot_iq4_nl_q8_0, 32, 18, 0},
  {"IQ4_XS", quantize_iq4_xs, (dqfn)dequantize_row_iq4_xs, quantize_row_q8_K, 256, 292, ggml_vec_dot_iq4_xs_q8_K, 256, 136, 0},
  {"IQ3_S", quantize_iq3_s, (dqfn)dequantize_row_iq3_s, quantize_row_q8_K, 256, 292, ggml_vec_dot_iq3_s_q8_K, 256, 110, 512},
  {"IQ3_XXS", quantize_iq3_xxs, (dqfn)dequantize_row_iq3_xxs, quantize_row_q8_K, 256, 292, ggml_vec_dot_iq3_xxs_q8_K, 256, 98, 256},
  {"IQ2_XXS", quantize_iq2_xxs, (dqfn)dequantize_row_iq2_xxs, quantize_row_q8_K, 256, 292, ggml_vec_dot_iq2_xxs_q8_K, 256, 66, -GGML_TYPE_IQ2_XXS},
  {"IQ2_XS", quantize_iq2_xs, (dqfn)dequantize_row_iq2_xs, quantize_row_q8_K, 256, 292, ggml_vec_dot_iq2_xs_q8_K, 256, 74, -GGML_TYPE_IQ2_XS},
  {"IQ2_S", quantize_iq2_s, (dqfn)dequantize_row_iq2_s, quantize_row_q8_K, 256, 292, ggml_vec_dot_iq2_s_q8_K, 256, 82, -GGML_TYPE_IQ2_S},
  {"IQ1_S", quantize_iq1_s, (dqfn)dequantize_row_iq1_s, quantize_row_q8_K, 256, 292, ggml_vec_dot_iq1_s_q8_K, 256, 50, -GGML_TYPE_IQ1_S},
  {"IQ1_M", quantize_iq1_m, (dqfn)dequantize_row_iq1_m, quantize_row_q8_K, 256, 292, ggml_vec_dot_iq1_m_q8_K, 256, 56, -GGML_TYPE_IQ1_M},
  {"TQ1_0", quantize_tq1_0, (dqfn)dequantize_row_tq1_0, quantize_row_q8_K, 256, 292, ggml_vec_dot_tq1_0_q8_K, 256, 54, 0},
  {"TQ2_0", quantize_tq2_0, (dqfn)dequantize_row_tq2_0, quantize_row_q8_K, 256, 292, ggml_vec_dot_tq2_0_q8_K, 256, 66, 0},
};

static void *readall(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb"); if (!f) { perror(p); exit(1); }
  fseek(f, 0, SEEK_END); *n = ftell(f); fseek(f, 0, SEEK_SET);
  void *b = malloc(*n); if (fread(b, 1, *n, f) != *n) { perror(p); exit(1); } fclose(f); return b;
}
static void writeall(const char *pre, const char *ext, const void *b, size_t n) {
  char p[4096]; snprintf(p, sizeof p, "%s%s", pre, ext);
  FILE *f = fopen(p, "wb"); if (!f || fwrite(b, 1, n, f) != n) { perror(p); exit(1); } fclose(f);
}

int main(int argc, char **argv) {
  if (argc != 6) { fprintf(stderr, "usage: harness TYPE N_PER_ROW x.f32 a.f32 OUTPREFIX\n"); return 2; }
  struct ent *e = NULL;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) if (!strcmp(tab[i].name, argv[1])) e = &tab[i];
  if (!e) { fprintf(stderr, "unknown type %s\n", argv[1]); return 2; }
  if (e->init > 0) iq3xs_init_impl(e->init);
  if (e->init < 0) iq2xs_init_impl((enum ggml_type)(-e->init));
  int n = atoi(argv[2]);
  size_t nx, na; float *x = readall(argv[3], &nx), *a = readall(argv[4], &na);
  int rows = nx / 4 / n;
  if (na != nx) { fprintf(stderr, "x and a differ in size\n"); return 2; }
  size_t rb = (size_t)n / e->blk * e->bytes, ab = (size_t)n / e->actblk * e->actbytes;
  uint8_t *q = calloc(rows, rb), *act = calloc(rows, ab);
  float *deq = calloc((size_t)rows * n, 4), *dot = calloc(rows, 4);
  // The 1-, 2- and 3-bit lattice quantizers want an importance matrix (IQ2_XXS, IQ2_XS and IQ1_S
  // assert one); any positive weights give valid blocks, which is all the dequantize and dot tests need.
  float *qw = NULL;
  if (e->init != 0) {
    qw = malloc(sizeof(float) * n);
    for (int j = 0; j < n; j++) qw[j] = 1.0f + (float)((j * 37) % 17) / 8.0f;
  }
  e->q(x, q, rows, n, qw);
  for (int r = 0; r < rows; r++) {
    e->dq(q + r * rb, deq + (size_t)r * n, n);
    e->act(a + (size_t)r * n, act + r * ab, n);
    e->dot(n, dot + r, 0, q + r * rb, 0, act + r * ab, 0, 1);
  }
  writeall(argv[5], ".q", q, rows * rb);
  writeall(argv[5], ".deq", deq, (size_t)rows * n * 4);
  writeall(argv[5], ".act", act, rows * ab);
  writeall(argv[5], ".dot", dot, rows * 4);
  return 0;
}
