// RoPE and KV store in one dispatch (decode's rope_f32 ×2 + kv_store): the
// batch's keys are rotated (ref.RoPE) and stored with its values in the KV
// cache as kv_store.comp stores them, and, when qheads > 0, its queries are
// rotated the same way into d (the Attention's q operand). Saves a decode
// step two dispatches and two barriers per layer.
//
// All three sources are rows of X (the activation arena) at element
// offsets qoff, koff and voff: queries qheads·hd values a token, keys and
// values kvheads·hd. Each invocation takes two neighbouring elements of
// one row (hd is even): a query pair, or a key pair and its value pair,
// which go to cache row cell[t] + pos[t] (step buffer words celloff and
// posoff) — with KV_F16 the two binary16 halves of one word, with KV_F32
// two words. An element's rotation is rope.comp's (the same table entry,
// rope_rot's products), so the cache and d hold exactly what rope_f32
// followed by kv_store_* writes.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint qheads, kvheads, hd, half_, neox, ntok;
    uint qoff, doff, koff, voff;
    uint posoff, celloff, toff;
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer Table { float table[]; };
layout(binding = 2) readonly buffer Step { uint step[]; };
layout(binding = 3) writeonly buffer D { float d[]; };
layout(binding = 4) writeonly buffer KC { uint kc[]; };
layout(binding = 5) writeonly buffer VC { uint vc[]; };

#include "half.glsl"
#define ROPE_SRC(i) x[i]
#include "rope.glsl"
#include "kvquant.glsl"

void main() {
    const uint qpairs = pc.qheads * pc.hd / 2u, kvpairs = pc.kvheads * pc.hd / 2u;
#ifdef KV_QUANT
    const uint chunks = (2u * kvpairs + 63u) / 64u; // per token
    const uint nq = pc.ntok * qpairs, total = nq + pc.ntok * chunks;
#else
    const uint nq = pc.ntok * qpairs, total = nq + pc.ntok * kvpairs;
#endif
    const uint stride = gl_NumWorkGroups.x * WG;
    for (uint g = gl_GlobalInvocationID.x; g < total; g += stride) {
        if (g < nq) {
            const uint t = g / qpairs, i = 2u * (g % qpairs); // element i of token t's row
            const uint e = i % pc.hd;
            const uint head = pc.qoff + t * 2u * qpairs + i - e;
            const uint pos = step[pc.posoff + t];
            const uint o = pc.doff + t * 2u * qpairs + i;
            d[o] = rope_one(head, e, pos);
            d[o + 1u] = rope_one(head, e + 1u, pos);
            continue;
        }
        const uint gk = g - nq;
        const uint width = 2u * kvpairs;
#ifdef KV_QUANT
        {
            const uint t = gk / chunks, e0 = 64u * (gk % chunks);
            const uint pos = step[pc.posoff + t];
            const uint nb = min(2u, (width - e0) / 32u);
            const uint base = ((step[pc.celloff + t] + pos) * kv_row_bytes(width) + e0 / 32u * KV_BB) / 4u;
            const uint nw = (nb * KV_BB + 3u) / 4u;
            float xs[64];
            uint w[17];
            for (uint i = 0u; i < 32u * nb; i++) {
                const uint e = (e0 + i) % pc.hd;
                xs[i] = rope_one(pc.koff + t * width + e0 + i - e, e, pos);
            }
            kv_pack(xs, nb, w);
            for (uint i = 0u; i < nw; i++) {
                kc[base + i] = w[i];
            }
            for (uint i = 0u; i < 32u * nb; i++) {
                xs[i] = x[pc.voff + t * width + e0 + i];
            }
            kv_pack(xs, nb, w);
            for (uint i = 0u; i < nw; i++) {
                vc[base + i] = w[i];
            }
            continue;
        }
#else
        const uint t = gk / kvpairs, i = 2u * (gk % kvpairs);
        const uint e = i % pc.hd;
        const uint pos = step[pc.posoff + t];
        const uint head = pc.koff + t * width + i - e;
        const float k0 = rope_one(head, e, pos), k1 = rope_one(head, e + 1u, pos);
        const float v0 = x[pc.voff + t * width + i], v1 = x[pc.voff + t * width + i + 1u];
        const uint dst = (step[pc.celloff + t] + pos) * width + i;
#if defined(KV_F16)
        kc[dst / 2u] = f32_to_f16(k0) | (f32_to_f16(k1) << 16);
        vc[dst / 2u] = f32_to_f16(v0) | (f32_to_f16(v1) << 16);
#elif defined(KV_F32)
        kc[dst] = floatBitsToUint(k0);
        kc[dst + 1u] = floatBitsToUint(k1);
        vc[dst] = floatBitsToUint(v0);
        vc[dst + 1u] = floatBitsToUint(v1);
#else
#error "define KV_F16, KV_F32, KV_Q8_0 or KV_Q4_0"
#endif
#endif
    }
}
