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
#extension GL_KHR_shader_subgroup_arithmetic : require

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
#define Q8_LANES
#include "quantize.glsl"

void main() {
#if defined(ROUND_F16) || defined(ROUND_BF16)
    // Variant ROUND_F16: the activations rounded to binary16 (kept as
    // float32 values) for the F16 matmuls, at word qoff + t·ncols + k;
    // with F16X2 as binary16 pairs.
    // ROUND_BF16: rounded to bfloat16 for the BF16 matmuls, as
    // quant.FP32ToBF16 (nearest even, NaNs made quiet).
#ifdef F16X2
    // Variant F16X2 (with ROUND_F16): binary16 pairs, ceil(ncols / 2)
    // words a token (the last one's high half 0 for odd ncols), the layout
    // the F16 tensor-core tiles read.
    const uint np = (pc.ncols + 1u) / 2u;
    for (uint j = gl_GlobalInvocationID.x; j < np * pc.ntok; j += gl_NumWorkGroups.x * WG) {
        const uint t = j / np, k = 2u * (j % np), i = pc.xoff + t * pc.ncols + k;
        q[pc.qoff + j] = f32_to_f16(x[i]) | (k + 1u < pc.ncols ? f32_to_f16(x[i + 1u]) << 16 : 0u);
    }
    return;
#endif
    const uint n = pc.ncols * pc.ntok;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * WG) {
#ifdef ROUND_F16
        q[pc.qoff + i] = floatBitsToUint(round_f16(x[pc.xoff + i]));
#else
        q[pc.qoff + i] = bf16_bits(x[pc.xoff + i]);
#endif
    }
#else
    // An invocation per value (q8_lanes): a block's 32 values are loaded
    // at once, its scale is one subgroup operation on NVIDIA. The rows of
    // ncols values (whole blocks) lie one after another, so value i is in
    // block i/32 of the batch. Workgroups stride over chunks of WG values
    // alike, so every invocation reaches q8_lanes' barriers.
    const uint n = pc.ncols * pc.ntok;
    const uint t = gl_LocalInvocationID.x;
    for (uint base = gl_WorkGroupID.x * WG; base < n; base += gl_NumWorkGroups.x * WG) {
        const uint i = base + t;
        const bool live = i < n;
        q8_lanes(live ? x[pc.xoff + i] : 0.0, live, t, pc.qoff + (i / 32u) * BW);
    }
#endif
}
