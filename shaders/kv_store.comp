// KV store: the batch's K and V rows (width values each, width even) go
// to cache rows cell[t] + pos[t]: the first cell of token t's sequence
// plus its position (both from the step buffer, at words celloff and
// posoff).
// KV_F16 rounds to binary16 to nearest even as ggml_cpy does (two values
// per word); KV_F32 stores the float bits; KV_Q8_0 and KV_Q4_0 quantize
// (kvquant.glsl), an invocation per 64 values of a row (two blocks, whole
// words).
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint width, ntok;
    uint koff, voff, posoff, celloff;
} pc;

layout(binding = 0) readonly buffer K { float k[]; };
layout(binding = 1) readonly buffer V { float v[]; };
layout(binding = 2) readonly buffer Step { uint step[]; };
layout(binding = 3) writeonly buffer KC { uint kc[]; };
layout(binding = 4) writeonly buffer VC { uint vc[]; };

#include "half.glsl"
#include "kvquant.glsl"

#ifdef KV_QUANT
// store_chunk quantizes the 64 values (or the last 32) of token t's K and
// V rows from element e0 and writes them to cache row cell.
void store_chunk(uint t, uint e0, uint cell) {
    const uint nb = min(2u, (pc.width - e0) / 32u);
    const uint base = (cell * kv_row_bytes(pc.width) + e0 / 32u * KV_BB) / 4u;
    const uint nw = (nb * KV_BB + 3u) / 4u;
    float x[64];
    uint w[17];
    for (uint i = 0u; i < 32u * nb; i++) {
        x[i] = k[pc.koff + t * pc.width + e0 + i];
    }
    kv_pack(x, nb, w);
    for (uint i = 0u; i < nw; i++) {
        kc[base + i] = w[i];
    }
    for (uint i = 0u; i < 32u * nb; i++) {
        x[i] = v[pc.voff + t * pc.width + e0 + i];
    }
    kv_pack(x, nb, w);
    for (uint i = 0u; i < nw; i++) {
        vc[base + i] = w[i];
    }
}
#endif

void main() {
    const uint stride = gl_NumWorkGroups.x * WG;
#ifdef KV_QUANT
    const uint chunks = (pc.width + 63u) / 64u;
    for (uint g = gl_GlobalInvocationID.x; g < pc.ntok * chunks; g += stride) {
        const uint t = g / chunks;
        store_chunk(t, 64u * (g % chunks), step[pc.celloff + t] + step[pc.posoff + t]);
    }
#else
    const uint pairs = pc.width / 2u;
    for (uint g = gl_GlobalInvocationID.x; g < pc.ntok * pairs; g += stride) {
        const uint t = g / pairs, i = 2u * (g % pairs);
        const uint src = t * pc.width + i;
        const uint dst = (step[pc.celloff + t] + step[pc.posoff + t]) * pc.width + i;
#if defined(KV_F16)
        kc[dst / 2u] = f32_to_f16(k[pc.koff + src]) | (f32_to_f16(k[pc.koff + src + 1u]) << 16);
        vc[dst / 2u] = f32_to_f16(v[pc.voff + src]) | (f32_to_f16(v[pc.voff + src + 1u]) << 16);
#elif defined(KV_F32)
        kc[dst] = floatBitsToUint(k[pc.koff + src]);
        kc[dst + 1u] = floatBitsToUint(k[pc.koff + src + 1u]);
        vc[dst] = floatBitsToUint(v[pc.voff + src]);
        vc[dst + 1u] = floatBitsToUint(v[pc.voff + src + 1u]);
#else
#error "define KV_F16, KV_F32, KV_Q8_0 or KV_Q4_0"
#endif
    }
#endif
}
