// RMSNorm (ops/ref RMSNorm, ggml_rms_norm): one workgroup per row of ncols,
// d = x / sqrt(mean(x²) + eps). Variant MUL_WEIGHT multiplies by the norm
// weight w[i] as well (the fused RMSNorm·w). Operands start at element
// offsets; d may alias x exactly.
//
// Numerics: ggml sums the squares in double; this sums in float (per
// invocation, then a tree), which differs in the last bits.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 512; // a decode step normalises one row: wide, so each invocation loads few values

layout(push_constant) uniform Push {
    uint ncols;
    uint nrows;
    float eps;
    uint xoff, doff, woff; // element offsets of x, d and w
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer D { float d[]; };
#ifdef MUL_WEIGHT
layout(binding = 2) readonly buffer W { float w[]; };
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
        const float v = x[xbase + i];
        sum += v * v;
    }
    sum = wg_sum(sum);
    const float scale = 1.0 / sqrt(sum / float(pc.ncols) + pc.eps);
    for (uint i = t; i < pc.ncols; i += WG) {
#ifdef MUL_WEIGHT
        d[dbase + i] = (x[xbase + i] * scale) * w[pc.woff + i];
#else
        d[dbase + i] = x[xbase + i] * scale;
#endif
    }
}
