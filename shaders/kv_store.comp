// KV store: the batch's K and V rows (width values each, width even) go
// to cache rows cell[t] + pos[t]: the first cell of token t's sequence
// plus its position (both from the step buffer, at words celloff and
// posoff).
// KV_F16 rounds to binary16 to nearest even as ggml_cpy does (two values
// per word); KV_F32 stores the float bits.
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

void main() {
    const uint pairs = pc.width / 2u;
    const uint stride = gl_NumWorkGroups.x * WG;
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
#error "define KV_F16 or KV_F32"
#endif
    }
}
