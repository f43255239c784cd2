// LayerNorm (ops/ref LayerNorm, ggml_norm): one workgroup per row of
// ncols, d = (x - mean) / sqrt(var + eps) with the variance of the centred
// values. Variant MUL_WEIGHT multiplies by the norm weight w[i]
// (LayerNormMul); MUL_ADD also adds the bias b[i] (LayerNormMulAdd, phi2's
// norms): ((x - mean)·scale)·w + b, rounded in ggml's order. Operands start
// at element offsets; d may alias x exactly (each invocation reads its
// elements before writing them, and the reductions end in barriers).
//
// Numerics: ggml sums in double; this sums in float (per invocation, then
// a tree), which differs in the last bits.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 512;

layout(push_constant) uniform Push {
    uint ncols;
    uint nrows;
    float eps;
    uint xoff, doff, woff, boff; // element offsets of x, d, w and b
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer D { float d[]; };
#if defined(MUL_WEIGHT) || defined(MUL_ADD)
layout(binding = 2) readonly buffer W { float w[]; };
#endif
#ifdef MUL_ADD
layout(binding = 3) readonly buffer B { float b[]; };
#endif

#include "reduce.glsl"

void main() {
    const uint row = wg_row();
    if (row >= pc.nrows) {
        return; // uniform across the workgroup
    }
    const uint t = gl_LocalInvocationID.x;
    const uint xbase = pc.xoff + row * pc.ncols;
    const uint dbase = pc.doff + row * pc.ncols;
    float sum = 0.0;
    for (uint i = t; i < pc.ncols; i += WG) {
        sum += x[xbase + i];
    }
    const float mean = wg_sum(sum) / float(pc.ncols);
    float sum2 = 0.0;
    for (uint i = t; i < pc.ncols; i += WG) {
        precise const float c = x[xbase + i] - mean;
        sum2 += c * c;
    }
    const float scale = 1.0 / sqrt(wg_sum(sum2) / float(pc.ncols) + pc.eps);
    for (uint i = t; i < pc.ncols; i += WG) {
        precise float v = (x[xbase + i] - mean) * scale;
#if defined(MUL_WEIGHT) || defined(MUL_ADD)
        v = v * w[pc.woff + i];
#endif
#ifdef MUL_ADD
        v = v + b[pc.boff + i];
#endif
        d[dbase + i] = v;
    }
}
