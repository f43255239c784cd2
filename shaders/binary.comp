// Element-wise binary op with ggml's broadcast rule (ops/ref Add, Mul):
// d[i] = a[i] OP b[i mod nb]. nb == n is the plain element-wise case,
// nb < n broadcasts b over the rows of a (the norm-weight case).
// Variants: OP_ADD, OP_MUL. Every operand starts at an element offset
// (push constants) in its buffer; d may alias a or b exactly.
#version 450

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform Push {
    uint n;  // elements of a and d
    uint nb; // elements of b, divides n
    uint aoff, boff, doff;
} pc;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

void main() {
    // Grid-stride loop: any dispatch size covers any n.
    const uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
#if defined(OP_ADD)
        d[pc.doff + i] = a[pc.aoff + i] + b[pc.boff + i % pc.nb];
#elif defined(OP_MUL)
        d[pc.doff + i] = a[pc.aoff + i] * b[pc.boff + i % pc.nb];
#else
#error "define OP_ADD or OP_MUL"
#endif
    }
}
