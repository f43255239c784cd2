// Matrix × vector (ops/ref MatMul for small token counts): one workgroup
// per weight row and token, d[t·nrows + r] = W[r,:]·x[t,:]; W has nrows
// rows of ncols elements, x ntok rows (gl_WorkGroupID.z is the token).
// Variants by weight type: W_F32, W_F16 (binary16 bits, two per word; the
// activations are rounded to binary16 first, as llama.cpp does).
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;

layout(push_constant) uniform Push {
    uint ncols;
    uint nrows;
} pc;

#if defined(W_F32)
layout(binding = 0) readonly buffer Wt { float w[]; };
float load_w(uint i) { return w[i]; }
float act(float v) { return v; }
#elif defined(W_F16)
layout(binding = 0) readonly buffer Wt { uint w[]; };
float load_w(uint i) {
    const vec2 h = unpackHalf2x16(w[i >> 1]);
    return (i & 1u) != 0u ? h.y : h.x;
}
float act(float v) { return unpackHalf2x16(packHalf2x16(vec2(v, 0.0))).x; }
#else
#error "define a weight type"
#endif
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

#include "reduce.glsl"

void main() {
    const uint row = wg_row();
    if (row >= pc.nrows) {
        return;
    }
    const uint t = gl_LocalInvocationID.x;
    const uint tok = gl_WorkGroupID.z;
    const uint wbase = row * pc.ncols;
    const uint xbase = tok * pc.ncols;
    float sum = 0.0;
    for (uint k = t; k < pc.ncols; k += WG) {
        sum += load_w(wbase + k) * act(x[xbase + k]);
    }
    sum = wg_sum(sum);
    if (t == 0) {
        d[tok * pc.nrows + row] = sum;
    }
}
