// Streams a buffer of n4 uvec4s once and sums its 32-bit words (modulo
// 2^32) into one word per workgroup: the device-memory read probe behind
// `graphrun bench --backend vulkan --bandwidth` (Device.ReadBandwidth). The
// sum keeps the reads from being optimised away, and because integer
// addition is exact in any order the host can check that every word was
// read exactly once. Each invocation keeps four loads in flight (a
// grid-stride loop unrolled by four into separate sums): one load at a
// time leaves a GPU's memory system mostly idle.
#version 450

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256; // a power of two (the tree reduction)

layout(push_constant) uniform Push {
    uint n4; // uvec4s to read
} pc;

layout(binding = 0) readonly buffer Data { uvec4 data[]; };
layout(binding = 1) writeonly buffer Part { uint part[]; }; // one word per workgroup

shared uint sums[WG];

void main() {
    const uint stride = gl_NumWorkGroups.x * WG;
    uvec4 a0 = uvec4(0), a1 = uvec4(0), a2 = uvec4(0), a3 = uvec4(0);
    uint i = gl_GlobalInvocationID.x;
    // i + 3·stride < n4, written so that it cannot wrap around.
    for (; i < pc.n4 && pc.n4 - i > 3u * stride; i += 4u * stride) {
        a0 += data[i];
        a1 += data[i + stride];
        a2 += data[i + 2u * stride];
        a3 += data[i + 3u * stride];
    }
    for (; i < pc.n4; i += stride) {
        a0 += data[i];
    }
    const uvec4 a = a0 + a1 + a2 + a3;
    const uint l = gl_LocalInvocationID.x;
    sums[l] = a.x + a.y + a.z + a.w;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (l < s) {
            sums[l] += sums[l + s];
        }
        barrier();
    }
    if (l == 0u) {
        part[gl_WorkGroupID.x] = sums[0];
    }
}
