// Activations to Q8_0 blocks for the Q8_0/Q4_0 matmuls, as the CPU backend
// quantizes them (quant.QuantizeRow, ggml's quantize_row_q8_0): per block
// of 32, d = max|x|/127, q = round(x/d) with halves away from zero, d kept
// as binary16 (variants ROUND_F16, ROUND_BF16: see main). Block b of token
// t is written at word qoff + (t·nb + b)·BW: the float value of the
// binary16 d, then the 32 int8 in 8 words (BW = 9). Variant Q8_1 (for the
// Q4_1/Q5_1 matmuls, quant's Q8_1): BW = 10, with the float value of the
// binary16 s = Σq · d (d before its rounding, as the CPU) after d.
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
#ifdef Q8_1
#define BW 10u
#elif !defined(ROUND_F16) && !defined(ROUND_BF16)
#define BW 9u
#endif
#include "quantize.glsl"

void main() {
#if defined(ROUND_F16) || defined(ROUND_BF16)
    // Variant ROUND_F16: the activations rounded to binary16 (kept as
    // float32 values) for the F16 matmuls, at word qoff + t·ncols + k.
    // ROUND_BF16: rounded to bfloat16 for the BF16 matmuls, as
    // quant.FP32ToBF16 (nearest even, NaNs made quiet).
    const uint n = pc.ncols * pc.ntok;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * WG) {
#ifdef ROUND_F16
        q[pc.qoff + i] = floatBitsToUint(round_f16(x[pc.xoff + i]));
#else
        q[pc.qoff + i] = bf16_bits(x[pc.xoff + i]);
#endif
    }
#else
    const uint nb = pc.ncols / 32u;
    const uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < nb * pc.ntok; i += stride) {
        const uint base = pc.xoff + (i / nb) * pc.ncols + (i % nb) * 32u;
        float v[32];
        for (uint j = 0u; j < 32u; j++) {
            v[j] = x[base + j];
        }
        store_q8_block(pc.qoff + i * BW, v);
    }
#endif
}
