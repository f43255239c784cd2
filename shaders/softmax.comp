// Row softmax (ops/ref SoftmaxRow, ggml_soft_max): one workgroup per row of
// ncols, d = softmax(x·scale). Entries of -Inf (masked) become exactly 0;
// each row needs one finite entry. Operands start at element offsets; d
// may alias x exactly.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;

layout(push_constant) uniform Push {
    uint ncols;
    uint nrows;
    float scale;
    uint xoff, doff; // element offsets of x and d
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) buffer D { float d[]; };

#include "reduce.glsl"

void main() {
    const uint row = wg_row();
    if (row >= pc.nrows) {
        return;
    }
    const uint t = gl_LocalInvocationID.x;
    const uint xbase = pc.xoff + row * pc.ncols;
    const uint dbase = pc.doff + row * pc.ncols;
    const float ninf = uintBitsToFloat(0xff800000u);

    float m = ninf;
    for (uint i = t; i < pc.ncols; i += WG) {
        m = max(m, x[xbase + i] * pc.scale);
    }
    m = wg_max(m);

    // Each invocation reads back only what it wrote itself, so d may
    // alias x without further barriers.
    float sum = 0.0;
    for (uint i = t; i < pc.ncols; i += WG) {
        const float v = x[xbase + i] * pc.scale;
        const float e = v == ninf ? 0.0 : exp(v - m);
        d[dbase + i] = e;
        sum += e;
    }
    sum = wg_sum(sum);
    const float inv = 1.0 / sum;
    for (uint i = t; i < pc.ncols; i += WG) {
        d[dbase + i] *= inv;
    }
}
