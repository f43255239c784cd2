// SiLU (ops/ref SiLU): d[i] = x[i] / (1 + exp(-x[i])). d may alias x.
#version 450

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform Push {
    uint n;
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer D { float d[]; };

void main() {
    const uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        const float v = x[i];
        d[i] = v / (1.0 + exp(-v));
    }
}
