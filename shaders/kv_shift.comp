// KV shift (ops/ref ShiftKV), one block of a context shift: cells
// [src0, src0+count) of one layer's K and V caches move down by delta
// cells (count <= delta, so a block never reads a cell it writes; blocks
// run in order with a barrier between them). Each moved key is rotated by
// the angles whose cos and sin the table holds at toff (entry i at 2i,
// ref.RoPE.ShiftCosSin of −delta): x0·c − x1·s and x0·s + x1·c with the
// products `precise` (no fused multiply-add), as the CPU does; the first
// 2·half_ elements of each head of hd rotate (pairs i, i+1, or i, i+half_
// with neox), the rest and the values move unchanged.
// An invocation handles one word pair of a row (elements e, e+1, e even):
// with neox also their partners e+half_, e+1+half_ (half_ even, checked by
// the host), so every binary16 word is written whole by one invocation.
// KV_F16 rounds the rotated keys to binary16 to nearest even (f32_to_f16);
// KV_F32 keeps float bits.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint width, hd, half_, neox;
    uint src0, count, delta, toff;
} pc;

layout(binding = 0) readonly buffer Table { float table[]; };
layout(binding = 1) buffer KC { uint kc[]; };
layout(binding = 2) buffer VC { uint vc[]; };

#include "half.glsl"

#if defined(KV_F16)
vec2 load2(uint i) {
    const uint w = kc[i / 2u];
    return vec2(f16_to_f32(w), f16_to_f32(w >> 16));
}
void store2(uint i, vec2 x) { kc[i / 2u] = f32_to_f16(x.x) | (f32_to_f16(x.y) << 16); }
void move2(uint dst, uint src) {
    kc[dst / 2u] = kc[src / 2u];
}
void movev2(uint dst, uint src) { vc[dst / 2u] = vc[src / 2u]; }
#elif defined(KV_F32)
vec2 load2(uint i) { return vec2(uintBitsToFloat(kc[i]), uintBitsToFloat(kc[i + 1u])); }
void store2(uint i, vec2 x) {
    kc[i] = floatBitsToUint(x.x);
    kc[i + 1u] = floatBitsToUint(x.y);
}
void move2(uint dst, uint src) {
    kc[dst] = kc[src];
    kc[dst + 1u] = kc[src + 1u];
}
void movev2(uint dst, uint src) {
    vc[dst] = vc[src];
    vc[dst + 1u] = vc[src + 1u];
}
#else
#error "define KV_F16 or KV_F32"
#endif

// rot rotates the pair (x0, x1) by pair i's angle.
vec2 rot(float x0, float x1, uint i) {
    const float c = table[pc.toff + 2u * i], s = table[pc.toff + 2u * i + 1u];
    precise float a = x0 * c;
    precise float b = x1 * s;
    precise float p = x0 * s;
    precise float q = x1 * c;
    precise float lo = a - b;
    precise float hi = p + q;
    return vec2(lo, hi);
}

void main() {
    const uint pairs = pc.width / 2u;
    const uint stride = gl_NumWorkGroups.x * WG;
    const uint dims = 2u * pc.half_;
    for (uint g = gl_GlobalInvocationID.x; g < pc.count * pairs; g += stride) {
        const uint c = g / pairs;
        const uint e = 2u * (g % pairs); // element within the row
        const uint src = (pc.src0 + c) * pc.width, dst = src - pc.delta * pc.width;
        movev2(dst + e, src + e);
        const uint he = e % pc.hd; // element within its head
        const uint head = e - he;
        if (he >= dims) {
            move2(dst + e, src + e);
        } else if (pc.neox == 0u) {
            const vec2 x = load2(src + e);
            store2(dst + e, rot(x.x, x.y, he / 2u));
        } else if (he < pc.half_) {
            const vec2 x = load2(src + e), y = load2(src + e + pc.half_);
            const vec2 r0 = rot(x.x, y.x, he), r1 = rot(x.y, y.y, he + 1u);
            store2(dst + e, vec2(r0.x, r1.x));
            store2(dst + e + pc.half_, vec2(r0.y, r1.y));
        }
    }
}
