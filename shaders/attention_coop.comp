// Causal grouped-query attention for prefills over a binary16 (F16) KV
// cache, on tensor cores (NVIDIA's VK_NV_cooperative_matrix, 16×16×16
// binary16 products summed in float32): attention_tiled.comp's bindings,
// push constants, masks and two passes, with both products — Q·Kᵀ and
// P·V — as matrix products of 16×16 tiles.
//
// One workgroup per (query head, tile of TQ = 64 tokens): eight subgroups
// of 32, a pair for each 16 tokens; each subgroup of a pair takes one half
// (TH = 32 rows) of every tile of cache rows. gl_WorkGroupID.x is the
// head, y the tile, counted from the last: the last tiles see the most
// cache rows, and dispatched first they do not trail the others. The
// workgroup walks the cache rows its tokens see in tiles of TK = 64 rows
// (skipping tiles none of them sees, as attention_tiled.comp), staged in
// shared memory as the cache's binary16 words.
//
// Why pairs: a 512-token prefill's attention is bound by each workgroup's
// chain of tile steps (its last tile of tokens walks 8 tiles, twice), not
// by the tensor cores: with a tile's scores, softmax and products split
// over two subgroups each step is about half as long, and twice the
// warps hide each other's latencies (session 13's kernel had one
// subgroup per 16 tokens). What decides it is registers: at 128 or fewer
// an invocation two workgroups fit a multiprocessor, at 131 one; the HD64
// variants therefore keep the queries in shared memory (QSHARED) and load
// their fragments as the scores need them, instead of holding them (126
// registers on the H200; TinyLlama's 512-token attention 129 → 88 µs a
// layer). Heads of 128 (212 registers, one workgroup a multiprocessor, no
// room for the queries in 48 KiB) gain at 512 tokens (178 → 145 µs for
// Llama 3 8B's heads) and lose at 2 048 (1 251 → 1 387 µs).
//
// Numerics. The queries are rounded to binary16 and the probabilities are
// exp(score − max)·(1/sum) rounded to binary16, as the CPU backend and
// attention_tiled.comp do with an F16 cache; the products of binary16
// values are exact in float32, but the tensor cores add them in their own
// order (and the sums of a 16×16×16 step with their own intermediate
// rounding), so scores and outputs are not attention_tiled.comp's bits:
// TestAttention holds them to the f16 cache's tolerance, the models to the
// end-to-end rule. Pass one: each subgroup's 16×TH scores of a tile go
// through its part of shared memory, where each invocation (a token, a
// quarter of the tile's rows) takes the largest of its 16 and adds their
// exponentials to its running sum, rescaled to the new largest; the four
// quarters are combined in order (the two in a subgroup by a shuffle, then
// the pair's through shared memory). Pass two: the scores again (the same
// products: the same bits), the probabilities as a binary16 16×TH matrix
// (p_to_f16: f32_to_f16's rounding for 0 ≤ p ≤ 1, cheaper), and
// O += P·V over the subgroup's half of the V rows, O in float32
// accumulator tiles for the whole head (head_dim ≤ 128, a multiple of 16;
// the HD64 variants stage rows of 64 values, for heads of up to 64); at
// the end the first subgroup of a pair adds the second's O to its own (in
// that order, through shared memory) and writes the tokens' outputs.
//
// Measured on the H100 and not kept (no gain over session 13's kernel): K
// and V tiles staged together with the next tile's loads in flight during
// the products, tiles of 32 rows for heads of 128, and skipping the V
// masking when the tokens' rows form one interval (docs/decisions.md).
//
// A cache row that no token of the workgroup sees may never have been
// written (another sequence's gap, NaN in the tests): V rows are staged as
// zeros there, since a zero probability times NaN would still be NaN in a
// matrix product. K rows need no such care: a masked score is never read.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256; // NSG subgroups of 32

#include "attention.glsl"

#if !defined(KV_F16)
#error "attention_coop.comp reads a binary16 cache (KV_F16)"
#endif

#define NSG 8u        // subgroups of 32 invocations: a pair per 16 tokens
#define WGN 256u      // invocations (WG, as a literal for array sizes)
#define TQ 64u        // tokens per workgroup: 16 a subgroup pair
#define TK 64u        // cache rows per tile
#define TH 32u        // a tile's rows a subgroup takes (half)
#ifdef HD64
#define HDMAX 64u     // largest head (the _hd64 variants)
#define QSHARED       // the queries' fragments loaded from shared memory as used
#else
#define HDMAX 128u    // largest head
#define WHOLE_PARTS   // an unmasked path for a token's part of a tile it sees whole
#endif
#define KW (HDMAX / 2u + 4u) // words a staged row: binary16 pairs, 4 more to keep rows 16-byte aligned and banks staggered
#define SS (TH + 4u)  // floats a row of a subgroup's 16×TH scores (and of its output columns)
#define PW (TH / 2u + 4u) // words a row of a subgroup's 16×TH binary16 probabilities
#define SLOTS (TK * HDMAX / 2u / WGN) // staged words per invocation (at most)

shared uint kv[TK * KW]; // the queries (in qsh with QSHARED), then a tile of K rows, then of V rows
shared float ss[NSG * 16u * SS];
shared uint ps[NSG * 16u * PW];
shared uint lo_row[TQ], hi_row[TQ]; // rows each token sees (lo > hi: none)
shared uint vis[TK]; // whether any token of the workgroup sees row r0 + i
shared float pair_m[2u * TQ], pair_s[2u * TQ]; // pass one's largest score and sum, per half and token
#ifdef QSHARED
shared uint qsh[TQ * KW]; // the queries, as binary16 words
#endif

#define ninf uintBitsToFloat(0xff800000u)

#define F16MAT fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define F32MAT fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

// p_to_f16 is f32_to_f16 for a probability (0 ≤ p ≤ 1), cheaper: a
// subnormal counts units of 2⁻²⁴ (rounded to even), a normal value's bits
// are rounded to nearest even in place and rebiased. Both are computed and
// one selected: no divergent branch (small probabilities are common).
uint p_to_f16(float p) {
    const uint b = floatBitsToUint(p);
    const uint n = (b + 0xfffu + ((b >> 13) & 1u) - 0x38000000u) >> 13;
    const uint sub = uint(roundEven(p * 16777216.0));
    return p < 6.103515625e-05 ? sub : n;
}

// needed says whether a token of the workgroup sees a row of r0 ..
// r0+TK-1 (every subgroup gets the same answer, the whole workgroup's).
bool needed(uint r0) {
    bool any = false;
    for (uint i = gl_SubgroupInvocationID; i < TQ; i += 32u) {
        any = any || (lo_row[i] <= hi_row[i] && lo_row[i] < r0 + TK && hi_row[i] >= r0);
    }
    return subgroupAny(any);
}

// next is the first tile of rows from r0 on (in steps of TK) that a token
// sees, or one past rhi.
uint next(uint r0, uint rhi) {
    while (r0 <= rhi && !needed(r0)) {
        r0 += TK;
    }
    return r0;
}

// sees says whether a token of the workgroup sees cache row r.
bool sees(uint r) {
    for (uint i = 0u; i < TQ; i++) {
        if (lo_row[i] <= r && r <= hi_row[i]) {
            return true;
        }
    }
    return false;
}

// load_tile stages rows r0 .. min(r0+TK-1, rhi) of KV head kvh's K (keys)
// or V rows as binary16 words, zeros after rhi (and, for V, in rows no
// token sees). Every load is issued before the first store, as in
// attention_tiled.comp; word u of invocation tid is word tid + WG·u of the
// tile, stepped through rows and columns rather than divided.
void load_tile(bool keys, uint r0, uint rhi, uint kvh) {
    const uint hw = pc.hd / 2u, rw = pc.kvheads * hw;
    const uint dr = WGN / hw, dc = WGN % hw;
    const uint base = kvh * hw;
    uint w[SLOTS];
    uint r = gl_LocalInvocationID.x / hw, c = gl_LocalInvocationID.x % hw;
    [[unroll]] for (uint u = 0u; u < SLOTS; u++) {
        w[u] = 0u;
        if (r < TK && r0 + r <= rhi && (keys || vis[r] != 0u)) {
            const uint i = (r0 + r) * rw + base + c;
            w[u] = keys ? kc[i] : vc[i];
        }
        r += dr;
        c += dc;
        if (c >= hw) {
            c -= hw;
            r++;
        }
    }
    r = gl_LocalInvocationID.x / hw;
    c = gl_LocalInvocationID.x % hw;
    [[unroll]] for (uint u = 0u; u < SLOTS; u++) {
        if (r < TK) {
            kv[r * KW + c] = w[u];
        }
        r += dr;
        c += dc;
        if (c >= hw) {
            c -= hw;
            r++;
        }
    }
}

// sum_pair combines two (largest, sum of exponentials) parts, a's first.
void sum_pair(float ma, float sa, float mb, float sb, out float m, out float s) {
    m = max(ma, mb);
    s = ma == ninf ? 0.0 : sa * exp(ma - m);
    s += mb == ninf ? 0.0 : sb * exp(mb - m);
}

void main() {
    const uint h = gl_WorkGroupID.x;
    const uint t0 = (gl_NumWorkGroups.y - 1u - gl_WorkGroupID.y) * TQ;
    const uint tid = gl_LocalInvocationID.x;
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    // The subgroup's 16 tokens (g) and half of each tile's rows (hh); the
    // invocation's token (of the 16, and of the workgroup's) and quarter
    // (q4) of the tile's rows; rot staggers the quarters' and tokens'
    // reads of the scores across the banks.
    const uint g = sg % 4u, hh = sg / 4u;
    const uint ti = lane % 16u, q4 = lane / 16u, tok = 16u * g + ti;
    const uint rot = 2u * (ti / 8u) + q4;
    const uint hd = pc.hd, hw = hd / 2u, nd = hd / 16u;
    const uint kvh = h / (pc.heads / pc.kvheads);
    const uint ntile = min(TQ, pc.ntok - t0);
    const uint sbase = 16u * SS * sg, pbase = 16u * PW * sg;
    const uint off = TH * hh; // the subgroup's first row of a tile

    // The queries, rounded to binary16, into kv (qsh with QSHARED, where
    // the scores load their fragments as they need them); without QSHARED
    // each subgroup then holds its 16 tokens as matrices of 16 dimensions.
    for (uint i = tid; i < TQ * hw; i += WGN) {
        const uint r = i / hw, c = i - r * hw;
        uint w = 0u;
        if (r < ntile) {
            const uint at = pc.qoff + ((t0 + r) * pc.heads + h) * hd + 2u * c;
            w = f32_to_f16(q[at]) | (f32_to_f16(q[at + 1u]) << 16);
        }
#ifdef QSHARED
        qsh[r * KW + c] = w;
#else
        kv[r * KW + c] = w;
#endif
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
#ifndef QSHARED
    F16MAT qm[HDMAX / 16u];
    [[unroll]] for (uint d = 0u; d < HDMAX / 16u; d++) {
        qm[d] = F16MAT(0.0);
        if (d < nd) {
            coopMatLoadNV(qm[d], kv, 16u * g * KW + 8u * d, KW, false);
        }
    }
#endif
    uint rlo = 0xffffffffu, rhi = 0u, slo = 0xffffffffu, shi = 0u;
    for (uint i = 0u; i < ntile; i++) {
        rlo = min(rlo, lo_row[i]);
        rhi = max(rhi, hi_row[i]);
        if (i / 16u == g) {
            slo = min(slo, lo_row[i]);
            shi = max(shi, hi_row[i]);
        }
    }
    const uint lo = lo_row[tok], hi = hi_row[tok];

// SCORES: the subgroup's 16×TH scores against its part of the K tile in
// kv, into its part of ss (row = token, column = the part's row).
#ifdef QSHARED
#define SCORES                                                                        \
    {                                                                                 \
        F32MAT sm[TH / 16u];                                                          \
        [[unroll]] for (uint j = 0u; j < TH / 16u; j++) {                             \
            sm[j] = F32MAT(0.0);                                                      \
        }                                                                             \
        [[unroll]] for (uint d = 0u; d < HDMAX / 16u; d++) {                          \
            if (d < nd) {                                                             \
                F16MAT qf;                                                            \
                coopMatLoadNV(qf, qsh, 16u * g * KW + 8u * d, KW, false);             \
                [[unroll]] for (uint j = 0u; j < TH / 16u; j++) {                     \
                    F16MAT km;                                                        \
                    coopMatLoadNV(km, kv, (off + 16u * j) * KW + 8u * d, KW, true);   \
                    sm[j] = coopMatMulAddNV(qf, km, sm[j]);                           \
                }                                                                     \
            }                                                                         \
        }                                                                             \
        [[unroll]] for (uint j = 0u; j < TH / 16u; j++) {                             \
            coopMatStoreNV(sm[j], ss, sbase + 16u * j, SS, false);                    \
        }                                                                             \
    }                                                                                 \
    subgroupMemoryBarrierShared();                                                    \
    subgroupBarrier();
#else
#define SCORES                                                                        \
    [[unroll]] for (uint j = 0u; j < TH / 16u; j++) {                                 \
        F32MAT sm = F32MAT(0.0);                                                      \
        [[unroll]] for (uint d = 0u; d < HDMAX / 16u; d++) {                          \
            if (d < nd) {                                                             \
                F16MAT km;                                                            \
                coopMatLoadNV(km, kv, (off + 16u * j) * KW + 8u * d, KW, true);       \
                sm = coopMatMulAddNV(qm[d], km, sm);                                  \
            }                                                                         \
        }                                                                             \
        coopMatStoreNV(sm, ss, sbase + 16u * j, SS, false);                           \
    }                                                                                 \
    subgroupMemoryBarrierShared();                                                    \
    subgroupBarrier();
#endif

// WHOLE (WHOLE_PARTS): whether the invocation's token sees every row of
// its part (a quarter) of the tile at r0 with no soft cap: the scores need
// no mask there. Same values, fewer instructions; the HD64 variants go
// without it (it takes them past 128 registers: one workgroup a
// multiprocessor instead of two, 88 → 94 µs).
#define WHOLE(r0) (lo <= (r0) + off + (TH / 2u) * q4 && (r0) + off + (TH / 2u) * q4 + (TH / 2u - 1u) <= hi && pc.softcap == 0.0)

// LIVE: whether a token of the subgroup sees a row of its half of the
// tile at r0.
#define LIVE(r0) (slo <= shi && slo < (r0) + off + TH && shi >= (r0) + off)

    // Pass 1: the largest score and the sum of exponentials.
    float m = ninf, s = 0.0;
    for (uint r0 = next(rlo, rhi); r0 <= rhi; r0 = next(r0 + TK, rhi)) {
        barrier(); // kv's queries or last tile are used up
        load_tile(true, r0, rhi, kvh);
        barrier();
        if (LIVE(r0)) {
            SCORES
            float x[TH / 2u];
            float mt = ninf;
#ifdef WHOLE_PARTS
            if (WHOLE(r0)) {
                [[unroll]] for (uint j = 0u; j < TH / 2u; j++) {
                    const uint c = (TH / 2u) * q4 + (j + rot) % (TH / 2u);
                    x[j] = ss[sbase + ti * SS + c] * pc.scale;
                    mt = max(mt, x[j]);
                }
            } else
#endif
            {
                [[unroll]] for (uint j = 0u; j < TH / 2u; j++) {
                    const uint c = (TH / 2u) * q4 + (j + rot) % (TH / 2u), r = r0 + off + c;
                    x[j] = r >= lo && r <= hi ? capped(ss[sbase + ti * SS + c]) * pc.scale : ninf;
                    mt = max(mt, x[j]);
                }
            }
            if (mt != ninf) {
                const float mn = max(m, mt);
                float add = 0.0;
                [[unroll]] for (uint j = 0u; j < TH / 2u; j++) {
                    add += exp(x[j] - mn);
                }
                s = s * exp(m - mn) + add;
                m = mn;
            }
            subgroupBarrier(); // ss is read before the next tile's scores
        }
    }
    // The parts of a token: the subgroup's two by a shuffle, the first
    // part's first; then the pair's, the first subgroup's first.
    float mx, total;
    {
        const float mo = subgroupShuffleXor(m, 16u), so = subgroupShuffleXor(s, 16u);
        if (q4 == 0u) {
            sum_pair(m, s, mo, so, mx, total);
        } else {
            sum_pair(mo, so, m, s, mx, total);
        }
    }
    if (q4 == 0u) {
        pair_m[hh * TQ + tok] = mx;
        pair_s[hh * TQ + tok] = total;
    }
    barrier();
    sum_pair(pair_m[tok], pair_s[tok], pair_m[TQ + tok], pair_s[TQ + tok], mx, total);
    const float inv = div_rn(1.0, total);

    // Pass 2: the probabilities, and O += P·V over the half's V rows.
    F32MAT om[HDMAX / 16u];
    [[unroll]] for (uint n = 0u; n < HDMAX / 16u; n++) {
        om[n] = F32MAT(0.0);
    }
    for (uint r0 = next(rlo, rhi); r0 <= rhi; r0 = next(r0 + TK, rhi)) {
        barrier(); // kv's last V tile is used up
        load_tile(true, r0, rhi, kvh);
        if (tid < TK) {
            vis[tid] = sees(r0 + tid) ? 1u : 0u;
        }
        barrier();
        const bool live = LIVE(r0);
        if (live) {
            SCORES
#ifdef WHOLE_PARTS
            if (WHOLE(r0)) {
                [[unroll]] for (uint j = 0u; j < TH / 4u; j++) {
                    const uint c = (TH / 2u) * q4 + 2u * ((j + rot) % (TH / 4u));
                    const uint p0 = p_to_f16(exp(ss[sbase + ti * SS + c] * pc.scale - mx) * inv);
                    const uint p1 = p_to_f16(exp(ss[sbase + ti * SS + c + 1u] * pc.scale - mx) * inv);
                    ps[pbase + ti * PW + c / 2u] = p0 | (p1 << 16);
                }
            } else
#endif
            {
                [[unroll]] for (uint j = 0u; j < TH / 4u; j++) {
                    const uint c = (TH / 2u) * q4 + 2u * ((j + rot) % (TH / 4u));
                    uint w = 0u;
                    [[unroll]] for (uint e = 0u; e < 2u; e++) {
                        const uint r = r0 + off + c + e;
                        if (r >= lo && r <= hi) {
                            const float x = capped(ss[sbase + ti * SS + c + e]) * pc.scale;
                            w |= p_to_f16(exp(x - mx) * inv) << (16u * e);
                        }
                    }
                    ps[pbase + ti * PW + c / 2u] = w;
                }
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
        barrier(); // every subgroup's scores are taken from the K tile
        load_tile(false, r0, rhi, kvh);
        barrier();
        if (live) {
            [[unroll]] for (uint k = 0u; k < TH / 16u; k++) {
                F16MAT pm;
                coopMatLoadNV(pm, ps, pbase + 8u * k, PW, false);
                [[unroll]] for (uint n = 0u; n < HDMAX / 16u; n++) {
                    if (n < nd) {
                        F16MAT vm;
                        coopMatLoadNV(vm, kv, (off + 16u * k) * KW + 8u * n, KW, false);
                        om[n] = coopMatMulAddNV(pm, vm, om[n]);
                    }
                }
            }
        }
    }

    // The output, 32 dimensions at a time: both subgroups of a pair
    // leave their O in their ss, the first adds the second's to its own
    // (in that order) as it reads them; each invocation writes 16 of its
    // token's values, and the first quarter the token's block of the
    // output projection's activations (BW).
    const uint pbs = 16u * SS * (sg + 4u); // the pair's second subgroup's ss
#define PAIRED(i) (ss[sbase + (i)] + ss[pbs + (i)])
    [[unroll]] for (uint b = 0u; b < HDMAX / 32u; b++) {
        if (32u * b < hd) {
            barrier(); // the previous block's sums are read
            coopMatStoreNV(om[2u * b], ss, sbase, SS, false);
            if (32u * b + 16u < hd) {
                coopMatStoreNV(om[2u * b + 1u], ss, sbase + 16u, SS, false);
            }
            barrier();
            if (hh == 0u && tok < ntile) {
                const uint obase = pc.ooff + ((t0 + tok) * pc.heads + h) * hd + 32u * b;
                for (uint j = 0u; j < 16u; j++) {
                    const uint d = 16u * q4 + j;
                    if (32u * b + d < hd) {
                        o[obase + d] = PAIRED(ti * SS + d);
                    }
                }
#ifdef BW
                if (q4 == 0u) {
                    float v[32];
                    for (uint j = 0u; j < 32u; j++) {
                        v[j] = PAIRED(ti * SS + j);
                    }
                    store_q8_block(pc.aoff + (((t0 + tok) * pc.heads + h) * hd / 32u + b) * BW, v);
                }
#endif
            }
        }
    }
}
