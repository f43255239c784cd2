// SiLU (ops/ref SiLU): d[i] = x[i] / (1 + exp(-x[i])); variant SWIGLU
// multiplies by u[i] as well (ops/ref SwiGLU); variant COPY copies
// (d[i] = x[i], a Copy within one backend); variant GELU is ggml's
// table GELU (gelu.glsl); variant SCALE multiplies by a float (ops/ref
// Scale; the last push word holds it). Operands start at element offsets;
// d may alias x.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform Push {
    uint n;
    uint xoff, doff;
#if defined(SCALE)
    float s;
#elif defined(SOFTCAP)
    float s, inv; // the cap and 1/cap (float32, from the host as ggml computes it)
#else
    uint uoff;
#endif
} pc;

#ifdef GELU
#include "half.glsl"
#include "gelu.glsl"
#endif

layout(binding = 0) readonly buffer X { float x[]; };
#ifdef SWIGLU
layout(binding = 1) readonly buffer U { float u[]; };
layout(binding = 2) writeonly buffer D { float d[]; };
#else
layout(binding = 1) writeonly buffer D { float d[]; };
#endif

void main() {
    const uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        const float v = x[pc.xoff + i];
#if defined(SWIGLU)
        d[pc.doff + i] = (v / (1.0 + exp(-v))) * u[pc.uoff + i];
#elif defined(COPY)
        d[pc.doff + i] = v;
#elif defined(GELU)
        d[pc.doff + i] = gelu_f16table(v);
#elif defined(SCALE)
        d[pc.doff + i] = v * pc.s;
#elif defined(SOFTCAP)
        d[pc.doff + i] = tanh(v * pc.inv) * pc.s;
#else
        d[pc.doff + i] = v / (1.0 + exp(-v));
#endif
    }
}
