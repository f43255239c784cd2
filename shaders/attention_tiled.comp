// Causal grouped-query attention (ops/ref Attention) for batches of many
// tokens — a prefill — with attention.comp's bindings, push constants and
// numerics, in tiles: one workgroup per (query head, tile of TQ tokens),
// gl_WorkGroupID.x the head, y the tile. attention.comp gives each token
// its own workgroup, which reads every K row twice and every V row once
// for that token alone; here a tile's tokens share each K and V tile of
// TK cache rows, loaded once into shared memory, so the cache is read
// TQ times less often and the products come from shared memory.
//
// The tokens of a tile may belong to different sequences (continuous
// batching): token t sees cache rows cell[t] + first .. cell[t] + pos[t]
// (attention.comp), and the workgroup walks the rows from the lowest any
// of its tokens sees to the highest, skipping a tile of rows none of them
// sees; each score is masked by its own token's range.
//
// Two passes, as attention.comp: the first finds each token's largest
// score and the sum of exp(score − largest) (invocation (t, g) keeps them
// for rows g, g + NG, … of every tile; the NG are combined at the end as
// attention.comp combines its invocations'); the second computes the
// scores again, the probabilities exp(score − max)·(1/sum) (rounded to
// binary16 with an F16 cache, as the CPU does) and accumulates P·V in row
// order. Scores are summed over the head's dimensions in order, as
// attention.comp and the CPU do. head_dim ≤ HDMAX, a multiple of 4.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128; // NG·TQ

#include "attention.glsl"

#define TQ 16u // tokens per tile (one per invocation of each group of 16)
#define TK 32u // cache rows per tile
#define NG 8u  // invocations per token: each takes every NG-th row and dimension group
#define LANES (NG * TQ) // WG
#define HDMAX 128u
// Rows are read 4 values at a time (vec4), and padded by one vec4 so that
// the invocations of a subgroup, reading different rows, meet different
// banks.
#define RS (HDMAX / 4u + 1u) // row stride in vec4
shared vec4 qt[TQ * RS]; // the tile's queries (binary16-rounded with F16)
shared vec4 kv[TK * RS]; // a tile of K rows, then of V rows
shared float pt[TQ * (TK + 1u)]; // probabilities
shared uint lo_row[TQ], hi_row[TQ]; // rows each token sees (lo > hi: none)
shared float stat_m[NG * TQ], stat_s[NG * TQ];

#define ninf uintBitsToFloat(0xff800000u)

// load_tile copies rows r0 .. r0+nrows-1 (nrows ≤ TK) of KV head kvh's K
// (keys) or V into kv as floats. The invocation's loads (a word — two
// binary16 values, or one float — each) are all issued before the first
// is stored: one after another, each would wait for the cache. Word u of
// invocation tid is word tid + LANES·u of the tile, in row (tid + LANES·u) /
// (hd/VPW) — stepped, not divided.
#if defined(KV_F16)
#define VPW 2u // values per cache word
#else
#define VPW 1u
#endif
#define SLOTS (TK * HDMAX / VPW / LANES) // words per invocation
void load_tile(bool keys, uint r0, uint nrows, uint kvh) {
    const uint hw = pc.hd / VPW, rw = pc.kvheads * hw;
    const uint r00 = gl_LocalInvocationID.x / hw, c00 = gl_LocalInvocationID.x % hw;
    const uint dr = LANES / hw, dc = LANES % hw;
    const uint base = r0 * rw + kvh * hw;
    uint w[SLOTS];
    uint r = r00, c = c00;
    for (uint u = 0u; u < SLOTS; u++) {
        w[u] = 0u;
        if (r < nrows) {
            const uint i = base + r * rw + c;
            w[u] = keys ? kc[i] : vc[i];
        }
        r += dr;
        c += dc;
        if (c >= hw) {
            c -= hw;
            r++;
        }
    }
    r = r00;
    c = c00;
    for (uint u = 0u; u < SLOTS; u++) {
        if (r < TK) {
#if defined(KV_F16)
            const vec2 x = vec2(f16_to_f32(w[u] & 0xffffu), f16_to_f32(w[u] >> 16));
            if ((c & 1u) == 0u) {
                kv[r * RS + c / 2u].xy = x;
            } else {
                kv[r * RS + c / 2u].zw = x;
            }
#else
            kv[r * RS + c / 4u][c % 4u] = uintBitsToFloat(w[u]);
#endif
        }
        r += dr;
        c += dc;
        if (c >= hw) {
            c -= hw;
            r++;
        }
    }
}

// score_tile writes token ti's scores against rows kg, kg + NG, … of the
// K tile in kv (rows from r0), capped and scaled, to pt (-inf where
// masked).
void score_tile(uint ti, uint kg, uint r0) {
    const uint hd = pc.hd;
    float dot[TK / NG];
    for (uint k = 0u; k < TK / NG; k++) {
        dot[k] = 0.0;
    }
    for (uint d4 = 0u; d4 < hd / 4u; d4++) {
        const vec4 qd = qt[ti * RS + d4];
        for (uint k = 0u; k < TK / NG; k++) {
            const vec4 kd = kv[(kg + NG * k) * RS + d4];
            dot[k] += qd.x * kd.x; // in order, as the CPU sums
            dot[k] += qd.y * kd.y;
            dot[k] += qd.z * kd.z;
            dot[k] += qd.w * kd.w;
        }
    }
    const uint lo = lo_row[ti], hi = hi_row[ti];
    for (uint k = 0u; k < TK / NG; k++) {
        const uint r = r0 + kg + NG * k;
        pt[ti * (TK + 1u) + kg + NG * k] = r >= lo && r <= hi ? capped(dot[k]) * pc.scale : ninf;
    }
}

// needed says whether any token of the tile sees a row of r0 .. r0+TK-1.
bool needed(uint r0) {
    for (uint i = 0u; i < TQ; i++) {
        if (lo_row[i] <= hi_row[i] && lo_row[i] < r0 + TK && hi_row[i] >= r0) {
            return true;
        }
    }
    return false;
}

// next is the first tile of rows from r0 on (in steps of TK) that a token
// sees, or one past rhi.
uint next(uint r0, uint rhi) {
    while (r0 <= rhi && !needed(r0)) {
        r0 += TK;
    }
    return r0;
}

void main() {
    const uint h = gl_WorkGroupID.x, t0 = gl_WorkGroupID.y * TQ;
    const uint tid = gl_LocalInvocationID.x;
    const uint ti = tid % TQ, kg = tid / TQ; // token of the tile; row (and dimension) group
    const uint hd = pc.hd, width = pc.kvheads * hd;
    const uint kvh = h / (pc.heads / pc.kvheads);
    const uint ntile = min(TQ, pc.ntok - t0);

    for (uint i = tid; i < TQ * hd; i += WG) {
        const uint r = i / hd, d = i - r * hd;
        float x = 0.0;
        if (r < ntile) {
            x = q[pc.qoff + ((t0 + r) * pc.heads + h) * hd + d];
#if defined(KV_F16)
            x = round_f16(x);
#endif
        }
        qt[r * RS + d / 4u][d % 4u] = x;
    }
    if (tid < TQ) {
        uint lo = 1u, hi = 0u; // none
        if (tid < ntile) {
            const uint t = t0 + tid;
            const uint visible = step[pc.posoff + t] + 1u;
            const uint first = pc.window != 0u && visible > pc.window ? visible - pc.window : 0u;
            const uint cell = step[pc.celloff + t];
            lo = cell + first;
            hi = cell + visible - 1u;
        }
        lo_row[tid] = lo;
        hi_row[tid] = hi;
    }
    barrier();
    uint rlo = 0xffffffffu, rhi = 0u;
    for (uint i = 0u; i < ntile; i++) {
        rlo = min(rlo, lo_row[i]);
        rhi = max(rhi, hi_row[i]);
    }

    // Pass 1: the largest score and the sum of exponentials.
    float m = ninf, s = 0.0;
    for (uint r0 = next(rlo, rhi); r0 <= rhi; r0 = next(r0 + TK, rhi)) {
        load_tile(true, r0, min(TK, rhi + 1u - r0), kvh);
        barrier();
        score_tile(ti, kg, r0);
        for (uint k = 0u; k < TK / NG; k++) {
            const float x = pt[ti * (TK + 1u) + kg + NG * k];
            if (x == ninf) {
                continue;
            }
            if (x > m) {
                s = s * exp(m - x) + 1.0;
                m = x;
            } else {
                s += exp(x - m);
            }
        }
        barrier();
    }
    stat_m[kg * TQ + ti] = m;
    stat_s[kg * TQ + ti] = s;
    barrier();
    float mx = ninf;
    for (uint g = 0u; g < NG; g++) {
        mx = max(mx, stat_m[g * TQ + ti]);
    }
    float total = 0.0;
    for (uint g = 0u; g < NG; g++) {
        const float mg = stat_m[g * TQ + ti];
        total += mg == ninf ? 0.0 : stat_s[g * TQ + ti] * exp(mg - mx);
    }
    const float inv = div_rn(1.0, total);

    // Pass 2: the probabilities, and P·V. Invocation (ti, kg) sums
    // dimensions 4·g .. 4·g + 3 of token ti for g = kg, kg + NG, ….
    vec4 acc[HDMAX / 4u / NG];
    for (uint i = 0u; i < HDMAX / 4u / NG; i++) {
        acc[i] = vec4(0.0);
    }
    for (uint r0 = next(rlo, rhi); r0 <= rhi; r0 = next(r0 + TK, rhi)) {
        const uint nrows = min(TK, rhi + 1u - r0);
        load_tile(true, r0, nrows, kvh);
        barrier();
        score_tile(ti, kg, r0);
        for (uint k = 0u; k < TK / NG; k++) {
            const uint at = ti * (TK + 1u) + kg + NG * k;
            const float x = pt[at];
            float p = x == ninf ? 0.0 : exp(x - mx) * inv;
#if defined(KV_F16)
            p = round_f16(p);
#endif
            pt[at] = p;
        }
        barrier();
        load_tile(false, r0, nrows, kvh);
        barrier();
        for (uint j = 0u; j < nrows; j++) {
            const float p = pt[ti * (TK + 1u) + j];
            if (p == 0.0) {
                continue; // masked, or too small to count; a row it cannot see may be unwritten
            }
            for (uint i = 0u; i < HDMAX / 4u / NG; i++) {
                const uint g = kg + NG * i;
                if (g < hd / 4u) {
                    acc[i] += p * kv[j * RS + g];
                }
            }
        }
        barrier();
    }

    if (ti < ntile) {
        const uint obase = pc.ooff + ((t0 + ti) * pc.heads + h) * hd;
        for (uint i = 0u; i < HDMAX / 4u / NG; i++) {
            const uint g = kg + NG * i;
            if (g < hd / 4u) {
                for (uint c = 0u; c < 4u; c++) {
                    o[obase + 4u * g + c] = acc[i][c];
                }
#ifdef BW
                qt[ti * RS + g] = acc[i]; // the queries are no longer needed
#endif
            }
        }
    }
#ifdef BW
    barrier();
    // One invocation per (token, block of 32 dimensions).
    const uint blocks = hd / 32u;
    for (uint i = tid; i < ntile * blocks; i += WG) {
        const uint r = i / blocks, b = i - r * blocks;
        float v[32];
        for (uint j = 0u; j < 32u; j++) {
            v[j] = qt[r * RS + 8u * b + j / 4u][j % 4u];
        }
        store_q8_block(pc.aoff + (((t0 + r) * pc.heads + h) * hd / 32u + b) * BW, v);
    }
#endif
}
