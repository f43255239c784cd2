// Causal grouped-query attention (ops/ref Attention) over a KV cache whose
// rows 0..pos[t] hold this batch's K and V already (kv_store). One
// workgroup per (query head, token): gl_WorkGroupID.x is the head, y the
// token. Query head h reads KV head h/(heads/kvheads); token t sees
// positions 0..pos[t] (positions from the step buffer at word posoff).
//
// Numerics as the CPU backend: with KV_F16 the query is rounded to
// binary16 for Q·Kᵀ and the probabilities for P·V; scores are the dot
// product times scale; probabilities are exp(s - max) times the float32
// reciprocal of their sum. Two passes over K: running max and sum, then
// the probabilities, accumulated against V a chunk of WG positions at a
// time. head_dim ≤ 4·WG.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint heads, kvheads, hd, ntok;
    uint qoff, ooff, posoff;
    float scale;
} pc;

layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer Step { uint step[]; };
layout(binding = 2) readonly buffer KC { uint kc[]; };
layout(binding = 3) readonly buffer VC { uint vc[]; };
layout(binding = 4) writeonly buffer O { float o[]; };

#include "half.glsl"
#include "reduce.glsl"

shared float qs[4 * WG];
shared float ps[WG];

#if defined(KV_F16)
float kval(uint i) { return f16_to_f32((kc[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu); }
float vval(uint i) { return f16_to_f32((vc[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu); }
#elif defined(KV_F32)
float kval(uint i) { return uintBitsToFloat(kc[i]); }
float vval(uint i) { return uintBitsToFloat(vc[i]); }
#else
#error "define KV_F16 or KV_F32"
#endif

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    const uint tid = gl_LocalInvocationID.x;
    const uint hd = pc.hd;
    const uint width = pc.kvheads * hd;
    const uint kvh = h / (pc.heads / pc.kvheads);
    const uint visible = step[pc.posoff + t] + 1u;
    const uint qbase = pc.qoff + (t * pc.heads + h) * hd;
    for (uint i = tid; i < hd; i += WG) {
#if defined(KV_F16)
        qs[i] = round_f16(q[qbase + i]);
#else
        qs[i] = q[qbase + i];
#endif
    }
    barrier();

    const float ninf = uintBitsToFloat(0xff800000u);
    float m = ninf, s = 0.0;
    for (uint j = tid; j < visible; j += WG) {
        const uint kb = j * width + kvh * hd;
        float dot = 0.0;
        for (uint i = 0u; i < hd; i++) {
            dot += qs[i] * kval(kb + i);
        }
        const float x = dot * pc.scale;
        if (x > m) {
            s = s * exp(m - x) + 1.0;
            m = x;
        } else {
            s += exp(x - m);
        }
    }
    const float mx = wg_max(m);
    const float total = wg_sum(m == ninf ? 0.0 : s * exp(m - mx));
    const float inv = div_rn(1.0, total);

    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
    for (uint c0 = 0u; c0 < visible; c0 += WG) {
        const uint j = c0 + tid;
        float p = 0.0;
        if (j < visible) {
            const uint kb = j * width + kvh * hd;
            float dot = 0.0;
            for (uint i = 0u; i < hd; i++) {
                dot += qs[i] * kval(kb + i);
            }
            p = exp(dot * pc.scale - mx) * inv;
#if defined(KV_F16)
            p = round_f16(p);
#endif
        }
        ps[tid] = p;
        barrier();
        const uint n = min(WG, visible - c0);
        for (uint k = 0u; k < 4u; k++) {
            const uint dd = tid + k * WG;
            if (dd < hd) {
                for (uint jj = 0u; jj < n; jj++) {
                    acc[k] += ps[jj] * vval((c0 + jj) * width + kvh * hd + dd);
                }
            }
        }
        barrier();
    }
    const uint obase = pc.ooff + (t * pc.heads + h) * hd;
    for (uint k = 0u; k < 4u; k++) {
        const uint dd = tid + k * WG;
        if (dd < hd) {
            o[obase + dd] = acc[k];
        }
    }
}
