// Causal grouped-query attention (ops/ref Attention) over a KV cache whose
// rows 0..pos[t] of token t's sequence hold this batch's K and V already
// (kv_store). One workgroup per (query head, token): gl_WorkGroupID.x is
// the head, y the token. Query head h reads KV head h/(heads/kvheads);
// token t sees positions 0..pos[t] of its sequence, the cache rows from
// cell[t] on (positions and first cells from the step buffer at words
// posoff and celloff).
//
// Numerics as the CPU backend: with KV_F16 the query is rounded to
// binary16 for Q·Kᵀ and the probabilities for P·V; scores are the dot
// product times scale; probabilities are exp(s - max) times the float32
// reciprocal of their sum. Two passes over K: running max and sum, then
// the probabilities, accumulated against V a chunk of WG positions at a
// time: the workgroup is WG/64 groups of 64 invocations, group g taking
// positions g, g + WG/64, … of each chunk for dimensions lane, lane + 64,
// … of the head (head_dim ≤ 256), and the groups' sums are added at the
// end, in group order. With WG 64 that is one group summing every
// position in order; a decode step takes WG 256, four groups, so each
// invocation's chain of V loads is a quarter as long (a decode step's
// attention is 32 workgroups, one per head, bound by that chain).
//
// Variant ROPE_KV (a decode step of one token) also does rope_kv.comp's
// work, saving its dispatch and barrier: each workgroup rotates its query
// head and its KV head's key, rounds key and value as the cache stores
// them (kcur, vcur) and uses them for the token's own position — the key
// loads of that one score come from kcur (the sums are the same code),
// and the value is added after the V loads by the group whose last term
// it is — so the sums, their order and the bits are the unfused
// dispatches'. The last workgroup of each KV head writes the row to the
// cache. Conditional loads inside the batched loops made a first version
// 4 µs a layer slower; the loops are the unfused kernel's.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

#define Q8_LANES // quantize.glsl's q8_lanes, for the Q8_0/Q8_1 variants
#ifdef Q8_K
#define Q8K_LANES // and q8k_lanes for Q8_K (a workgroup of 256)
#endif
#include "attention.glsl"
#include "reduce.glsl"

#define GL 64u // invocations per position group
const uint NG = WG / GL; // position groups (WG is a multiple of 64)
shared float qs[4 * WG];
shared float ps[WG];
shared float part[4 * WG]; // group g's sum for dimension dd at 256·g + dd
// Scores of up to MAXS positions are kept from the first pass (beyond,
// the second pass computes them again).
#define MAXS 2048u
shared float sc[MAXS];

#ifdef Q8_K
shared bool tail; // this workgroup is its super-block's last
#endif
#ifdef ROPE_KV
shared float kcur[256], vcur[256]; // the step's own key (rotated) and value, as the cache holds them
#if defined(KV_F16)
float cache_round(float x) { return round_f16(x); }
#else
float cache_round(float x) { return x; }
#endif
#endif

// score is q·k of the K row starting at element kb, summed in order
// (as the CPU does). The loads of 16 pairs are issued together (a head of
// 64 values in two rounds; 8 measured 8 µs a token slower on the H100): a
// decode step is bound by their latency, not by arithmetic. hd is even
// (Supports) and kb too, so pairs never straddle a row.
// With ROPE_KV, cur takes the key from kcur instead (the step's own
// position): only the loads differ, the sums are the same code.
float score(uint kb, uint hd, bool cur) {
    float dot = 0.0;
    const uint w0 = kb >> 1, hw = hd >> 1;
    uint i = 0u;
    for (; i + 16u <= hw; i += 16u) {
        vec2 k[16];
#ifdef ROPE_KV
        if (cur) {
            for (uint u = 0u; u < 16u; u++) {
                k[u] = vec2(kcur[2u * (i + u)], kcur[2u * (i + u) + 1u]);
            }
        } else
#endif
        for (uint u = 0u; u < 16u; u++) {
            k[u] = kpair(w0 + i + u);
        }
        for (uint u = 0u; u < 16u; u++) {
            dot += qs[2u * (i + u)] * k[u].x;
            dot += qs[2u * (i + u) + 1u] * k[u].y;
        }
    }
    for (; i < hw; i++) {
#ifdef ROPE_KV
        const vec2 k = cur ? vec2(kcur[2u * i], kcur[2u * i + 1u]) : kpair(w0 + i);
#else
        const vec2 k = kpair(w0 + i);
#endif
        dot += qs[2u * i] * k.x;
        dot += qs[2u * i + 1u] * k.y;
    }
    return dot;
}

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    const uint tid = gl_LocalInvocationID.x;
    const uint hd = pc.hd;
    const uint width = pc.kvheads * hd;
    const uint kvh = h / (pc.heads / pc.kvheads);
    const uint visible = step[pc.posoff + t] + 1u;
    const uint cell0 = step[pc.celloff + t] * width; // the sequence's first row
    const uint qbase = pc.qoff + (t * pc.heads + h) * hd;
#ifdef ROPE_KV
    const uint pos = visible - 1u; // the token's own position
    const uint kvbase = t * width + kvh * hd;
    for (uint i = tid; i < hd; i += WG) {
        const float qv = rope_one(qbase, i, pos);
#if defined(KV_F16)
        qs[i] = round_f16(qv);
#else
        qs[i] = qv;
#endif
        kcur[i] = cache_round(rope_one(pc.koff + kvbase, i, pos));
        vcur[i] = cache_round(q[pc.voff + kvbase + i]);
    }
    barrier();
    const uint group = pc.heads / pc.kvheads;
    if (h % group == group - 1u) {
        // The KV head's last query head stores the row, as rope_kv.comp
        // would (the last: where workgroups run in order, as on lavapipe,
        // a read of the row instead of kcur or vcur fails the tests).
        const uint dst = cell0 + pos * width + kvh * hd;
#if defined(KV_F16)
        for (uint i = 2u * tid; i < hd; i += 2u * WG) {
            kc[(dst + i) / 2u] = f32_to_f16(kcur[i]) | (f32_to_f16(kcur[i + 1u]) << 16);
            vc[(dst + i) / 2u] = f32_to_f16(vcur[i]) | (f32_to_f16(vcur[i + 1u]) << 16);
        }
#else
        for (uint i = tid; i < hd; i += WG) {
            kc[dst + i] = floatBitsToUint(kcur[i]);
            vc[dst + i] = floatBitsToUint(vcur[i]);
        }
#endif
    }
#else
    const uint pos = 0xffffffffu; // no position is the step's own
    for (uint i = tid; i < hd; i += WG) {
#if defined(KV_F16)
        qs[i] = round_f16(q[qbase + i]);
#else
        qs[i] = q[qbase + i];
#endif
    }
    barrier();
#endif

    const float ninf = uintBitsToFloat(0xff800000u);
    const bool keep = visible <= MAXS;
    // Positions before first are outside the sliding window: their
    // probabilities are exactly 0, so they are skipped.
    const uint first = pc.window != 0u && visible > pc.window ? visible - pc.window : 0u;
    float m = ninf, s = 0.0;
    for (uint j = first + tid; j < visible; j += WG) {
        const float x = capped(score(cell0 + j * width + kvh * hd, hd, j == pos)) * pc.scale;
        if (keep) {
            sc[j] = x;
        }
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

    const uint g = tid / GL, lane = tid % GL;
    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
    for (uint c0 = first; c0 < visible; c0 += WG) {
        const uint j = c0 + tid;
        float p = 0.0;
        if (j < visible) {
            const float x = keep ? sc[j] : capped(score(cell0 + j * width + kvh * hd, hd, j == pos)) * pc.scale;
            p = exp(x - mx) * inv;
#if defined(KV_F16)
            p = round_f16(p);
#endif
        }
        ps[tid] = p;
        barrier();
        const uint n = min(WG, visible - c0);
        // With ROPE_KV the step's own position (the last) is left out of
        // the loads and added from vcur after them by its group: the
        // group's last term either way.
        const bool own = c0 + n - 1u == pos;
        const uint nl = own ? n - 1u : n;
        for (uint k = 0u; k < 4u; k++) {
            const uint dd = lane + k * GL;
            if (dd < hd) {
                const uint vb = cell0 + c0 * width + kvh * hd + dd;
                uint jj = g;
                // The group's positions, 8 loads at a time, summed in order.
                for (; jj + 7u * NG < nl; jj += 8u * NG) {
                    float v[8];
                    for (uint u = 0u; u < 8u; u++) {
                        v[u] = vval(vb + (jj + u * NG) * width);
                    }
                    for (uint u = 0u; u < 8u; u++) {
                        acc[k] += ps[jj + u * NG] * v[u];
                    }
                }
                for (; jj < nl; jj += NG) {
                    acc[k] += ps[jj] * vval(vb + jj * width);
                }
#ifdef ROPE_KV
                if (own && nl % NG == g) {
                    acc[k] += ps[nl] * vcur[dd];
                }
#endif
            }
        }
        barrier();
    }
    for (uint k = 0u; k < 4u; k++) {
        const uint dd = lane + k * GL;
        if (dd < hd) {
            part[256u * g + dd] = acc[k];
        }
    }
    barrier();
    const uint obase = pc.ooff + (t * pc.heads + h) * hd;
    for (uint dd = tid; dd < hd; dd += WG) {
        float v = part[dd];
        for (uint k = 1u; k < NG; k++) {
            v += part[256u * k + dd];
        }
        o[obase + dd] = v;
#ifdef BW
        qs[dd] = v; // q is no longer needed
#endif
    }
#ifdef Q8_K
    // One token: the heads of a super-block are its 256 values, one an
    // invocation (WG is 256).
    memoryBarrierBuffer();
    barrier(); // the head's output is written and visible
    const uint sb = h * hd / 256u, per = 256u / hd;
    if (tid == 0u) {
        tail = atomicAdd(cnt[sb], 1u) % per == per - 1u;
    }
    barrier();
    if (tail) { // uniform: the whole workgroup
        memoryBarrierBuffer();
        q8k_lanes(o[pc.ooff + sb * 256u + tid], true, tid, pc.aoff + sb * 73u);
    }
#endif
#ifdef BW
    // The head's hd/32 activation blocks, an invocation per value
    // (q8_lanes: store_q8_block's bits; a block's scale by one subgroup
    // operation instead of one invocation's loop over 32 values).
    barrier();
    for (uint base = 0u; base < hd; base += WG) { // uniform: every invocation loops alike
        const uint i = base + tid;
        const bool live = i < hd;
        q8_lanes(live ? qs[i] : 0.0, live, tid, pc.aoff + ((t * pc.heads + h) * hd / 32u + i / 32u) * BW);
    }
#endif
}
