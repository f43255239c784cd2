// Link stubs for harness: the few ggml.c symbols ggml-quants.c needs.
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include "ggml.h"
#include "ggml-impl.h"
float ggml_table_f32_f16[1 << 16];
__attribute__((constructor)) static void init_table(void) {
  for (int i = 0; i < (1 << 16); i++) ggml_table_f32_f16[i] = GGML_COMPUTE_FP16_TO_FP32((ggml_fp16_t)i);
}
void ggml_abort(const char *file, int line, const char *fmt, ...) {
  va_list ap; va_start(ap, fmt); fprintf(stderr, "%s:%d: ", file, line); vfprintf(stderr, fmt, ap); va_end(ap); abort();
}
static const struct { int t, blk, bytes; } sz[] = {
  {GGML_TYPE_Q4_0, 32, 18}, {GGML_TYPE_Q4_1, 32, 20}, {GGML_TYPE_Q5_0, 32, 22}, {GGML_TYPE_Q5_1, 32, 24},
  {GGML_TYPE_Q8_0, 32, 34}, {GGML_TYPE_Q2_K, 256, 84}, {GGML_TYPE_Q3_K, 256, 110}, {GGML_TYPE_Q4_K, 256, 144},
  {GGML_TYPE_Q5_K, 256, 176}, {GGML_TYPE_Q6_K, 256, 210}, {GGML_TYPE_Q8_K, 256, 292},
  {GGML_TYPE_IQ2_XXS, 256, 66}, {GGML_TYPE_IQ2_XS, 256, 74}, {GGML_TYPE_IQ3_XXS, 256, 98}, {GGML_TYPE_IQ1_S, 256, 50},
  {GGML_TYPE_IQ4_NL, 32, 18}, {GGML_TYPE_IQ3_S, 256, 110}, {GGML_TYPE_IQ2_S, 256, 82}, {GGML_TYPE_IQ4_XS, 256, 136},
  {GGML_TYPE_IQ1_M, 256, 56}, {GGML_TYPE_TQ1_0, 256, 54}, {GGML_TYPE_TQ2_0, 256, 66},
};
static int find(enum ggml_type t) { for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) if (sz[i].t == (int)t) return i; fprintf(stderr, "type %d\n", t); abort(); }
size_t ggml_type_size(enum ggml_type t) { return sz[find(t)].bytes; }
int64_t ggml_blck_size(enum ggml_type t) { return sz[find(t)].blk; }
size_t ggml_row_size(enum ggml_type t, int64_t ne) { int i = find(t); return sz[i].bytes * ne / sz[i].blk; }
const char *ggml_type_name(enum ggml_type t) { static char b[16]; snprintf(b, sizeof b, "type%d", t); return b; }
