// Flash attention (ops/ref FlashAttention, llama.cpp's -fa on the CPU)
// over an F16, Q8_0 or Q4_0 KV cache (KV_F16, KV_Q8_0, KV_Q4_0; K and V of
// one type, rows as kv_store writes them). One workgroup per (query head,
// token), as attention.comp: gl_WorkGroupID.x the head, y the token; the
// push constants and bindings are attention.comp's, except that scale is
// the score scale already divided by softcap when soft-capping (ggml's
// order: scale, then softcap·tanh) and capinv is unused.
//
// The cells are taken in tiles of WG, in order; within a tile the scores
// are computed in parallel (one cell per invocation), then every rounding
// of ggml's one-cell-at-a-time loop is kept:
//   - the query is converted to the K type's dot type first: binary16
//     (F16), or Q8_0 blocks by ggml-cpu's vector quantizer (Q8_0, Q4_0);
//   - F16 scores sum in ggml_vec_dot_f16's order (64 lanes, each lane's
//     products in order, the lanes folded as foldHsum, the tail summed
//     exactly and rounded once); Q8_0/Q4_0 scores in ggml_vec_dot_q8_0_q8_0's
//     and _q4_0_q8_0's (exact int sums of 4, fma(d, sum, lane), 8 lanes);
//   - the online softmax: a cell that raises the running maximum M scales
//     the accumulator by ms = exp(M − x) and adds its V row with weight
//     1, any other adds it with vs = exp(x − M); S = S·ms + vs unfused. A
//     cell's M before it is the tile's prefix maximum, so every cell's
//     ms and vs are computed at once; the accumulator then takes the
//     cells in order, one invocation per output element;
//   - with an F16 V the accumulator is rounded to binary16 after every
//     scale and multiply-add; the multiply-add is fused over whole blocks
//     of 64 elements, unfused in the tail (ggml_vec_mad_f16, ISO C);
//   - the output is the accumulator times the float32 value of 1/S.
// What is not ggml's: the device's exp and tanh (a few ulp), and fma on
// devices whose fma is not exact. head_dim ≤ 4·WG; quantized caches need
// head_dim a multiple of 32.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint heads, kvheads, hd, ntok;
    uint qoff, ooff, posoff;
    float scale; // divided by softcap when softcap > 0
    uint aoff; // Q8_0, Q8_1: word offset of the output's activation blocks
    uint celloff;
    uint window; // a token sees its last window positions; 0: all
    float softcap, capinv;
} pc;

layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer Step { uint step[]; };
layout(binding = 2) readonly buffer KC { uint kc[]; };
layout(binding = 3) readonly buffer VC { uint vc[]; };
layout(binding = 4) writeonly buffer O { float o[]; };

#include "half.glsl"

#if defined(Q8_0) || defined(Q8_1)
layout(binding = 5) writeonly buffer A { uint qa[]; };
#define QOUT qa
#if defined(Q8_0)
#define BW 9u
#else
#define BW 10u
#endif
#endif
#include "quantize.glsl"
#include "kvquant.glsl"

shared float qs[4 * WG]; // F16: the binary16 query; then the output
#ifdef KV_QUANT
shared int qi[4 * WG]; // the query's Q8_0 values
shared float qd[4 * WG / 32]; // and block scales
#endif
shared float sc[WG], msh[WG], vsh[WG];

#if defined(KV_F16)
float kval(uint i) { return f16_to_f32((kc[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu); }

// score is the F16 dot product of the query with the K head from
// element kb (ggml_vec_dot_f16 as ref.dotHalf: the products are exact).
float score(uint kb, uint hd) {
    const uint np = hd & ~63u;
    float v[16];
    for (uint j = 0u; j < 16u; j++) {
        float l[4];
        for (uint r = 0u; r < 4u; r++) {
            precise float a = 0.0;
            for (uint b = 0u; b < np; b += 64u) {
                const uint i = b + 16u * r + j;
                precise const float p = qs[i] * kval(kb + i);
                a = a + p;
            }
            l[r] = a;
        }
        precise const float s = (l[0] + l[2]) + (l[1] + l[3]);
        v[j] = s;
    }
    precise float h[8];
    for (uint i = 0u; i < 8u; i++) {
        h[i] = v[i] + v[i + 8u];
    }
    precise const float q0 = h[0] + h[4], q1 = h[1] + h[5], q2 = h[2] + h[6], q3 = h[3] + h[7];
    precise float s = (q0 + q2) + (q1 + q3);
    // The tail, summed in double by ggml: here as a float pair (s, c),
    // s + c exact but for c's own roundings, rounded once at the end.
    precise float c = 0.0;
    for (uint i = np; i < hd; i++) {
        precise const float p = qs[i] * kval(kb + i);
        precise const float t = s + p;
        precise const float z = t - s;
        precise const float e = (s - (t - z)) + (p - z);
        s = t;
        c = c + e;
    }
    precise const float r = s + c;
    return r;
}

// vval is element i (from the start of the cache) of V row-major.
float vval(uint row, uint i) { return f16_to_f32((vc[(row * pc.kvheads * pc.hd + i) >> 1] >> (((row * pc.kvheads * pc.hd + i) & 1u) * 16u)) & 0xffffu); }
#elif defined(KV_QUANT)
// score is ggml's vec_dot of the K head's blocks from byte kb with the
// query's Q8_0 blocks (ref.VecDotQ0).
float score(uint kb, uint hd) {
    float acc[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (uint b = 0u; b < hd / 32u; b++) {
        const uint blk = kb + b * KV_BB;
        precise const float d = f16_to_f32(KV_HALF(kc, blk)) * qd[b];
        for (uint j = 0u; j < 8u; j++) {
#if defined(KV_Q8_0)
            const int w = int(KV_WORD(kc, blk + 2u + 4u * j));
            int isum = 0;
            for (uint u = 0u; u < 4u; u++) {
                isum += bitfieldExtract(w, int(8u * u), 8) * qi[32u * b + 4u * j + u];
            }
#else
            const uint w = KV_WORD(kc, blk + 2u + 4u * (j & 3u)) >> (j < 4u ? 0u : 4u);
            int isum = 0;
            for (uint u = 0u; u < 4u; u++) {
                isum += (int((w >> (8u * u)) & 0xfu) - 8) * qi[32u * b + 4u * j + u];
            }
#endif
            acc[j] = fma(d, float(isum), acc[j]);
        }
    }
    precise const float r0 = acc[4] + acc[0], r1 = acc[5] + acc[1], r2 = acc[6] + acc[2], r3 = acc[7] + acc[3];
    precise const float r = (r0 + r2) + (r1 + r3);
    return r;
}

// vval is element i of V row row, widened exactly (ggml's to_float).
float vval(uint row, uint i) {
    const uint blk = row * kv_row_bytes(pc.kvheads * pc.hd) + i / 32u * KV_BB;
    const float d = f16_to_f32(KV_HALF(vc, blk));
    const uint j = i % 32u;
#if defined(KV_Q8_0)
    const uint b = blk + 2u + j;
    return float(bitfieldExtract(int(vc[b >> 2]), int((b & 3u) * 8u), 8)) * d;
#else
    const uint b = blk + 2u + (j & 15u);
    const uint nib = (vc[b >> 2] >> ((b & 3u) * 8u + (j < 16u ? 0u : 4u))) & 0xfu;
    return float(int(nib) - 8) * d;
#endif
}
#else
#error "define KV_F16, KV_Q8_0 or KV_Q4_0"
#endif

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    const uint tid = gl_LocalInvocationID.x;
    const uint hd = pc.hd;
    const uint width = pc.kvheads * hd;
    const uint kvh = h / (pc.heads / pc.kvheads);
    const uint visible = step[pc.posoff + t] + 1u;
    const uint row0 = step[pc.celloff + t]; // the sequence's first cache row
    const uint qbase = pc.qoff + (t * pc.heads + h) * hd;
#if defined(KV_F16)
    for (uint i = tid; i < hd; i += WG) {
        qs[i] = round_f16(q[qbase + i]);
    }
#else
    if (tid < hd / 32u) {
        float v[64];
        int qq[64];
        for (uint j = 0u; j < 32u; j++) {
            v[j] = q[qbase + 32u * tid + j];
        }
        qd[tid] = round_f16(q8v_quant(v, 0u, qq));
        for (uint j = 0u; j < 32u; j++) {
            qi[32u * tid + j] = qq[j];
        }
    }
#endif
    barrier();

    const float ninf = uintBitsToFloat(0xff800000u);
    const uint first = pc.window != 0u && visible > pc.window ? visible - pc.window : 0u;
    const uint np = hd & ~63u; // ggml_vec_mad's whole vector blocks
    float m = ninf, s = 0.0;
    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
    for (uint c0 = first; c0 < visible; c0 += WG) {
        const uint n = min(WG, visible - c0);
        if (tid < n) {
            const uint row = row0 + c0 + tid;
#if defined(KV_F16)
            precise float x = score(row * width + kvh * hd, hd) * pc.scale;
#else
            precise float x = score(row * kv_row_bytes(width) + kvh * (hd / 32u) * KV_BB, hd) * pc.scale;
#endif
            if (pc.softcap > 0.0) {
                x = pc.softcap * tanh(x);
            }
            sc[tid] = x;
        }
        barrier();
        if (tid < n) {
            // The running maximum before this cell.
            float mb = m;
            for (uint j = 0u; j < tid; j++) {
                if (sc[j] > mb) {
                    mb = sc[j];
                }
            }
            const float x = sc[tid];
            float ms = 1.0, vs = 1.0;
            if (x > mb) {
                ms = mb == ninf ? 0.0 : exp(mb - x);
            } else {
                vs = exp(x - mb);
            }
            msh[tid] = ms;
            vsh[tid] = vs;
        }
        barrier();
        for (uint j = 0u; j < n; j++) {
            if (sc[j] > m) {
                m = sc[j];
            }
            precise const float sm = s * msh[j];
            s = sm + vsh[j];
        }
        for (uint k = 0u; k < 4u; k++) {
            const uint dd = tid + k * WG;
            if (dd >= hd) {
                continue;
            }
            float a = acc[k];
            for (uint j = 0u; j < n; j++) {
                const float ms = msh[j], vs = vsh[j];
                if (ms != 1.0) {
                    precise const float sa = a * ms;
                    a = sa;
#if defined(KV_F16)
                    a = round_f16(a);
#endif
                }
                const float x = vval(row0 + c0 + j, kvh * hd + dd);
                if (dd < np) {
                    a = fma(x, vs, a);
                } else {
                    precise const float p = x * vs;
                    precise const float r = a + p;
                    a = r;
                }
#if defined(KV_F16)
                a = round_f16(a);
#endif
            }
            acc[k] = a;
        }
        barrier();
    }
    const float inv = div_rn(1.0, s);
    const uint obase = pc.ooff + (t * pc.heads + h) * hd;
    for (uint k = 0u; k < 4u; k++) {
        const uint dd = tid + k * WG;
        if (dd < hd) {
            precise const float r = acc[k] * inv;
            o[obase + dd] = r;
#ifdef BW
            qs[dd] = r; // the query is no longer needed
#endif
        }
    }
#ifdef BW
    barrier();
    if (tid < hd / 32u) {
        float v[32];
        for (uint j = 0u; j < 32u; j++) {
            v[j] = qs[32u * tid + j];
        }
        store_q8_block(pc.aoff + ((t * pc.heads + h) * hd / 32u + tid) * BW, v);
    }
#endif
}
