// RoPE (ops/ref RoPE.Apply) of ntok rows of heads·hd values: pairs of
// the first dims elements of each head rotate by the angle of their
// position, the rest pass through. The cos and sin come from a table
// computed on the host exactly as ref.RoPE computes them (float32 theta
// chain, cos/sin rounded from float64): entry (pos, i) at
// table[toff + 2·(pos·half + i)], half = dims/2, so the result is the
// CPU's bit for bit (the products are `precise`: no fused multiply-add).
// Positions come from the step buffer at word posoff. d may alias x.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint heads, hd, half_, neox, ntok;
    uint xoff, doff, posoff, toff;
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer Table { float table[]; };
layout(binding = 2) readonly buffer Step { uint step[]; };
layout(binding = 3) writeonly buffer D { float d[]; };

#include "rope.glsl"

void main() {
    const uint width = pc.heads * pc.hd;
    const uint stride = gl_NumWorkGroups.x * WG;
    for (uint g = gl_GlobalInvocationID.x; g < pc.ntok * width; g += stride) {
        const uint t = g / width;
        const uint e = g % pc.hd; // element within the head
        const uint head = g - e;  // index of the head's first element
        const uint dims = 2u * pc.half_;
        uint i, lo, hi;
        if (e >= dims) {
            d[pc.doff + g] = x[pc.xoff + g];
            continue;
        }
        if (pc.neox != 0u) {
            if (e >= pc.half_) {
                continue; // written with its partner
            }
            i = e;
            lo = e;
            hi = e + pc.half_;
        } else {
            if ((e & 1u) != 0u) {
                continue;
            }
            i = e / 2u;
            lo = e;
            hi = e + 1u;
        }
        const uint pos = step[pc.posoff + t];
        const uint ti = pc.toff + 2u * (pos * pc.half_ + i);
        const float c = table[ti], s = table[ti + 1u];
        const vec2 r = rope_rot(x[pc.xoff + head + lo], x[pc.xoff + head + hi], c, s);
        d[pc.doff + head + lo] = r.x;
        d[pc.doff + head + hi] = r.y;
    }
}
