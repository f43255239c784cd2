// Activations to Q8_K super-blocks for the K-quant matmuls, as the CPU
// backend quantizes them (quant.QuantizeRow, ggml's quantize_row_q8_K_ref):
// per block of 256, maxv = the first value of largest magnitude,
// iscale = -127/maxv, q = min(127, round-half-even(iscale·x)), d = 1/iscale
// (float32), and per 16 values the int16 sum of their quants. Block b of
// token t is written at word qoff + (t·nb + b)·73 as GGUF's Q8_K bytes: d,
// 64 words of int8, 8 words of int16 pairs. One workgroup per block (a
// grid stride over blocks), 4 values per invocation: WG must be 64.
// Variant LANES (a decode step's, where there are few blocks and the
// latency counts): an invocation per value, WG (a multiple of 256) values
// a workgroup (q8k_lanes); for a prefill's thousands of blocks it was
// slower (every invocation divides for the scale), so it is not the only
// one.
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
#ifdef LANES
#define Q8K_LANES
#include "quantize.glsl"
// An invocation per value (q8k_lanes): the rows of ncols values (whole
// super-blocks) lie one after another, so value i is in super-block i/256
// of the batch. Workgroups stride over chunks of WG values alike, so every
// invocation reaches q8k_lanes' barriers.
void main() {
    const uint n = pc.ncols * pc.ntok;
    const uint t = gl_LocalInvocationID.x;
    for (uint base = gl_WorkGroupID.x * WG; base < n; base += gl_NumWorkGroups.x * WG) {
        const uint i = base + t;
        const bool live = i < n;
        q8k_lanes(live ? x[pc.xoff + i] : 0.0, live, t, pc.qoff + (i / 256u) * 73u);
    }
}
#else
#define Q8K_QUADS
#include "quantize.glsl"

void main() {
    const uint nb = pc.ncols / 256u;
    for (uint i = gl_WorkGroupID.x; i < nb * pc.ntok; i += gl_NumWorkGroups.x) {
        const uint b = pc.xoff + (i / nb) * pc.ncols + (i % nb) * 256u + 4u * gl_LocalInvocationID.x;
        q8k_quads(vec4(x[b], x[b + 1u], x[b + 2u], x[b + 3u]), pc.qoff + i * 73u);
    }
}
#endif
