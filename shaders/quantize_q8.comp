// Activations to Q8_0 blocks for the Q8_0/Q4_0 matmuls, as the CPU backend
// quantizes them (quant.QuantizeRow, ggml's quantize_row_q8_0): per block
// of 32, d = max|x|/127, q = round(x/d) with halves away from zero, d kept
// as binary16 (variant ROUND_F16: see main). Block b of token t is written at word qoff + (t·nb + b)·9:
// the float value of the binary16 d, then the 32 int8 in 8 words.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint ncols, ntok;
    uint xoff, qoff;
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Q { uint q[]; };

#include "half.glsl"

void main() {
#ifdef ROUND_F16
    // Variant ROUND_F16: the activations rounded to binary16 (kept as
    // float32 values) for the F16 matmuls, at word qoff + t·ncols + k.
    const uint n = pc.ncols * pc.ntok;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * WG) {
        q[pc.qoff + i] = floatBitsToUint(round_f16(x[pc.xoff + i]));
    }
    return;
#endif
    const uint nb = pc.ncols / 32u;
    const uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < nb * pc.ntok; i += stride) {
        const uint base = pc.xoff + (i / nb) * pc.ncols + (i % nb) * 32u;
        float amax = 0.0;
        for (uint j = 0u; j < 32u; j++) {
            const float a = abs(x[base + j]);
            amax = amax > a ? amax : a;
        }
        const float dv = div_rn(amax, 127.0);
        const float id = dv != 0.0 ? div_rn(1.0, dv) : 0.0;
        const uint o = pc.qoff + i * 9u;
        q[o] = floatBitsToUint(round_f16(dv));
        for (uint k = 0u; k < 8u; k++) {
            uint word = 0u;
            for (uint j = 0u; j < 4u; j++) {
                precise float v = x[base + 4u * k + j] * id;
                word |= (uint(int(round_away(v))) & 0xffu) << (8u * j);
            }
            q[o + 1u + k] = word;
        }
    }
}
