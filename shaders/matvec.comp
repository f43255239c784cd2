// Matrix × vector (decode, and small batches) for the matmul family: the
// same products, epilogues (ADD, BIAS, GATEUP, GEGLU), push constants and
// bindings as matmul.comp,
// but LANES invocations of a workgroup cooperate on one weight row for up
// to NT tokens (gl_WorkGroupID.z is the token block; NT is specialization
// constant 1: 8, or 1 for a decode step, whose variant needs far fewer
// registers and so runs more rows at once); a workgroup of WG invocations
// (a power of two) takes ROWS rows (specialization constant 2, default 1;
// LANES = WG/ROWS, a multiple of the subgroup size): lane i of a row takes
// chunks i, i+LANES, … of 32 weights (single weights for F32/F16/BF16), so
// neighbouring invocations read neighbouring weight bytes, and the partial
// sums are reduced by subgroup additions, then across the row's subgroups
// through shared memory (any subgroup size with ROWS 1: lavapipe 8, NVIDIA
// 32, AMD 64). Workgroup x takes rows ROWS·x onwards; rows beyond the x
// dispatch limit continue in y.
//
// Weight types: W_F32, W_F16, W_BF16, W_Q8_0, W_Q4_0, W_Q5_0, W_Q4_1, W_Q5_1
// as in matmul.comp, W_IQ4_NL (Q8_0 activations, matvec only), and the
// K-quants W_Q2_K, W_Q3_K, W_Q4_K, W_Q5_K, W_Q6_K and W_IQ4_XS, which take activations
// quantized to Q8_K by quantize_q8k (binding 1 is then that scratch: per
// 256 values 73 words, the GGUF Q8_K block). Per 32-value chunk the
// integer sums are exact; the float terms follow ggml's operand order per
// super-block, (d·dy)·Σ(scale·isum) and (dmin·dy)·Σ(min·bsum), taken per
// chunk (Q4_K's one-weight rows of up to 4·LANES chunk pairs: per pair,
// the sums over both exact integers). Only the order of the float sums
// differs from the CPU. The lattice types W_IQ2_XXS, W_IQ2_XS, W_IQ2_S,
// W_IQ3_XXS, W_IQ3_S, W_IQ1_S, W_IQ1_M and the ternary W_TQ1_0, W_TQ2_0
// (lattice.glsl) take Q8_K activations too; the IQ types read their lattice table at the binding
// after the others (3, or 4 with an epilogue).
//
// The int8 products go four at a time through sdot4 (OpSDot, the Vulkan
// 1.3 feature shaderIntegerDotProduct, which the device check requires):
// weights are first made signed bytes (a level minus its bias by
// byte-wise add and xor, no carries), and the integer sums are exact, so
// the order of their terms does not matter and the bits are those of the
// byte-by-byte products. IQ4_NL, whose levels come from a table, keeps
// those; IQ4_XS's table levels are made bytes first (kquant.glsl).
//
// Variant QKV computes a MatMulQKV's three projections in one dispatch:
// their weights (one type) are rows of one buffer, and each row's result
// goes to its part of d (push constants nq … mtok); decode saves two
// dispatches a layer. The products are those of the plain variant.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_spirv_intrinsics : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint NT = 8u;
// ROWS weight rows per workgroup, LANES = WG/ROWS invocations each (a
// multiple of the subgroup size, so no subgroup spans two rows): a decode
// step's gate·up has more rows than an H100 keeps workgroups in flight
// (32 a multiprocessor), and two rows a workgroup run them in one wave.
layout(constant_id = 2) const uint ROWS = 1u;
const uint LANES = WG / ROWS;

layout(push_constant) uniform Push {
    uint ncols, nrows, ntok;
    uint xoff;    // x: element offset (float types) or word offset (scratch)
    uint doff;    // d: element offset
    uint eoff;    // ADD: element offset of e
    uint dstride; // elements between tokens in d (and e)
#ifdef QKV
    // The q, k and v weights lie in one buffer, k's rows from row kstart
    // and v's from vstart (rows between the parts are padding, skipped);
    // d holds the parts one after another, each mtok tokens of its rows.
    uint nq, kstart, nk, vstart, mtok;
#endif
#ifdef NORM_OUT
    uint qoff, nwoff; // the next norm's blocks: word offset in qa; its weight's element offset
#endif
#ifdef NORM_IN
    float eps; // the folded norm's
#endif
} pc;

layout(binding = 0) readonly buffer Wt { uint w[]; };
#if defined(W_Q8_0) || defined(W_Q4_0) || defined(W_Q5_0) || defined(W_IQ4_NL)
#define QUANT_ACT
#define Q8_0_ACT
#define ABW 9u // words per activation block (quantize_q8_0)
#elif defined(W_Q4_1) || defined(W_Q5_1)
#define QUANT_ACT
#define Q8_0_ACT // the same 32-value loop, Q8_1 activation blocks
#define Q8_1_ACT
#define ABW 10u // words per activation block (quantize_q8_1: d, s, 8 words)
#elif defined(W_Q2_K) || defined(W_Q3_K) || defined(W_Q4_K) || defined(W_Q5_K) || defined(W_Q6_K) || defined(W_IQ4_XS)
#define QUANT_ACT
#define Q8_K_ACT
#elif defined(W_IQ2_XXS) || defined(W_IQ2_XS) || defined(W_IQ2_S) || defined(W_IQ3_XXS) || defined(W_IQ3_S) || defined(W_IQ1_S) || defined(W_IQ1_M) || defined(W_TQ1_0) || defined(W_TQ2_0)
#define QUANT_ACT
#define Q8_K_ACT
#define LATTICE
#endif
#include "iq_tables.glsl"
#ifdef QUANT_ACT
layout(binding = 1) readonly buffer Xq { uint xq[]; };
#else
layout(binding = 1) readonly buffer X { float x[]; };
#endif
#if defined(OUT_Q8_0) || defined(OUT_Q8_1) || defined(OUT_Q8_K) || defined(NORM_OUT)
layout(binding = 2) coherent buffer D { float d[]; };
#else
layout(binding = 2) buffer D { float d[]; };
#endif
#if defined(ADD) || defined(BIAS)
layout(binding = 3) readonly buffer E { float e[]; };
#elif defined(GATEUP) || defined(GEGLU)
layout(binding = 3) readonly buffer Ut { uint u[]; };
#define NW 2u
#define TWO_WEIGHTS
#endif
#ifndef NW
#define NW 1u
#endif
#if defined(ADD) || defined(BIAS) || defined(GATEUP) || defined(GEGLU)
#define GRID_BINDING 4
#else
#define GRID_BINDING 3
#endif

#include "half.glsl"
#ifdef GEGLU
#include "gelu.glsl"
#endif

#if defined(NORM_OUT)
// Variant NORM_OUT (with ADD: a decode step's matmul writing the residual
// stream, whose next RMSNormMul's dispatch is folded into the matvecs
// reading it, which take NORM_IN): the workgroup that finishes a block of
// 32 rows last also writes, from word qoff of qa, the block of u = h·nw
// (h the rows just written, nw the norm's weight) as Q8_0 (q8_lanes, the
// scale as a float32, not rounded) and, after the row's blocks, the
// block's sum of squares Σh² in index order. The norm's factor
// 1/sqrt(Σ/n + eps) is common to the row: u's levels are those of
// RMSNorm(h)·nw's (up to the rounding of the products), and the readers
// (NORM_IN) sum the blocks' Σh² and multiply each block's scale by the
// factor. Counters count rows (ROWS a workgroup) modulo 32, so producers
// with one and two rows a workgroup share them. (A last tail per row
// computing the factor once cost the producer 4 µs a dispatch on the
// H200, twice the block tails alone: session 19.)
// With NORM_K (readers taking Q8_K activations: the K-quants) the blocks
// are Q8_K super-blocks of u (q8k_quads over each invocation's 4 values
// of u in registers: the first largest |u| sets the scale, kept as a
// float32 as Q8_K stores it), written by the workgroup that finishes 256
// rows last (counting rows modulo 256); the sums after them are still one
// per 32 rows, so the readers' factor is the same code, each the sum in
// order of 8 partial sums of 4 rows (in index order): 8 dependent
// additions in the tail where 32 took longer (session 20), after
// q8k_quads, whose barriers make the partial sums visible.
#ifdef NORM_K
#define Q8K_QUADS
#define QBLOCK 256u
#define QWORDS 73u
shared float hs[64]; // each invocation's Σh² of its 4 rows
#else
#define Q8_LANES
#define QBLOCK 32u
#define BW 9u
#define QWORDS BW
#define Q8_STORE_D(d) (d)
#endif
#define QOUT qa
layout(binding = 4) writeonly buffer QA { uint qa[]; };
layout(binding = 5) coherent buffer Cnt { uint cnt[]; };
layout(binding = 6) readonly buffer NWt { float nw[]; };
#include "quantize.glsl"
shared bool tail;
#ifndef NORM_K
shared float hs[QBLOCK];
#endif
#endif

#if defined(OUT_Q8_0) || defined(OUT_Q8_1) || defined(OUT_Q8_K)
// Variants OUT_Q8_0, OUT_Q8_1, OUT_Q8_K (a decode step's gate·up whose
// output only the FFN down reads, as Q8_0, Q8_1 or Q8_K activations): the
// workgroup that finishes a block's QBLOCK rows last (32; 256 for a Q8_K
// super-block) also quantizes the block, as quantize_q8/quantize_q8k
// would, into qa from word eoff (the push constant ADD's residual offset
// is free here). A counter per block (cnt, zero when the session starts)
// counts its workgroups modulo QBLOCK/ROWS, so every step and layer
// leaves it where it found it. Saves the down's quantize dispatch and
// barrier. d is read back by other workgroups: coherent. OUT_Q8_K's
// 256 values are quantized by the workgroup's 64 invocations, 4 each
// (q8k_quads; WG must be 64).
#define QOUT qa
#if defined(OUT_Q8_K)
#define Q8K_QUADS
#define QBLOCK 256u // rows a quantized block
#define QWORDS 73u  // its words
#else
#define Q8_LANES
#define QBLOCK 32u
#ifdef OUT_Q8_0
#define BW 9u
#else
#define BW 10u
#endif
#define QWORDS BW
#endif
layout(binding = 4) writeonly buffer QA { uint qa[]; };
layout(binding = 5) coherent buffer Cnt { uint cnt[]; };
#include "quantize.glsl"
shared bool tail;
#endif

shared float red[NT * NW * WG];
#ifdef NORM_IN
shared float nred[WG]; // NORM_IN: the row's subgroups' sums of Σh²
#endif

// word i of weight s (0: W, 1: U).
uint wword(uint s, uint i) {
#ifdef TWO_WEIGHTS
    return s == 0u ? w[i] : u[i];
#else
    return w[i];
#endif
}
#ifdef LATTICE
#define LW(s, i) wword(s, i)
#include "lattice.glsl"
// LATTICE_DOT is a chunk's term from its exact integer sum Σ(2s+1)·q·a
// (ternary: Σt·a), in the CPU's operand order (quant's dot products: per
// super-block (d·dy)·Σ, times the type's final factor).
#if defined(W_IQ2_XXS) || defined(W_IQ2_XS) || defined(W_IQ2_S)
#define LATTICE_DOT(dw, dy, isum) (((dw) * (dy)) * float(isum)) * 0.125
#elif defined(W_IQ3_XXS)
#define LATTICE_DOT(dw, dy, isum) (((dw) * (dy)) * float(isum)) * 0.25
#elif defined(W_IQ3_S)
#define LATTICE_DOT(dw, dy, isum) ((dw) * (dy)) * float(isum)
#elif defined(W_IQ1_S) || defined(W_IQ1_M)
// The bytes are 8·(point ± 1/8): Σ/8 is the CPU's sumi + sumShift/8, exact.
#define LATTICE_DOT(dw, dy, isum) ((dw) * (dy)) * (float(isum) * 0.125)
#else
#define LATTICE_DOT(dw, dy, isum) float(isum) * ((dw) * (dy))
#endif
#endif
uint wu16(uint s, uint off) { return (wword(s, off >> 2) >> ((off & 2u) * 8u)) & 0xffffu; }
uint wu32(uint s, uint off) {
    const uint sh = (off & 3u) * 8u;
    const uint lo = wword(s, off >> 2);
    return sh == 0u ? lo : (lo >> sh) | (wword(s, (off >> 2) + 1u) << (32u - sh));
}
#include "sdot.glsl"
#include "bw.glsl"

int sbyte(uint word, uint i) { return bitfieldExtract(int(word), int(i * 8u), 8); }
uint ubyte(uint word, uint i) { return bitfieldExtract(word, int(i * 8u), 8); }

#if defined(W_Q4_K) || defined(W_Q5_K)
// The weights as 16-byte quads too (Q4_K's and Q5_K's blocks are 144 and
// 176 bytes, and a row starts on a block): kquant.glsl reads a chunk's
// header and levels a quad a load.
layout(binding = 0) readonly buffer Wt4 { uvec4 w4[]; };
#ifdef TWO_WEIGHTS
layout(binding = 3) readonly buffer Ut4 { uvec4 u4[]; };
#endif
uvec4 wquad(uint s, uint i) {
#ifdef TWO_WEIGHTS
    return s == 0u ? w4[i] : u4[i];
#else
    return w4[i];
#endif
}
#endif
#include "kquant.glsl"

#ifdef NORM_IN
// Variant NORM_IN (a decode step, Q8_0 or Q8_K activations): the
// activations are a folded RMSNormMul's, written by the matmul before as
// blocks of h·nw with float32 scales followed by the Σh² of each 32
// values (NORM_OUT); each block's scale times the norm's factor
// 1/sqrt(Σh²/n + eps) (Q8_0: rounded to binary16, as quantize_q8_0
// stores it; Q8_K keeps float32 scales) is the normalised block's.
// norm_factor is that factor, the sums from word so: a row's lanes load
// them together (a lane's sums l, l + LANES, … in order) and add them by
// subgroups, then across the row's subgroups in order where a subgroup is
// narrower than the row (on NVIDIA only rows of 64 lanes; a decode step's
// QKV and gate·up take 32): every row of the dispatch gets the same
// factor. These loads do not wait for the weights'. Every invocation
// calls it (a barrier where subgroups are narrower than rows).
float norm_factor(uint so, uint l, uint rsub) {
    const uint nbx = pc.ncols / 32u;
    precise float p = 0.0;
    for (uint i = l; i < nbx; i += LANES) {
        p += uintBitsToFloat(xq[so + i]);
    }
    p = subgroupAdd(p);
    if (gl_SubgroupSize < LANES) { // uniform
        const uint spr = LANES / gl_SubgroupSize;
        if (subgroupElect()) {
            nred[gl_SubgroupID] = p;
        }
        barrier();
        p = nred[rsub * spr];
        for (uint k = 1u; k < spr; k++) {
            p += nred[rsub * spr + k];
        }
    }
    precise const float sc = 1.0 / sqrt(p / float(pc.ncols) + pc.eps);
    return sc;
}
#endif

void main() {
    const uint row0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS;
    if (row0 >= pc.nrows) {
        return; // the whole workgroup: no barrier is skipped by part of it
    }
    const uint rsub = gl_LocalInvocationID.x / LANES; // the workgroup's row of this invocation
    const uint row = row0 + rsub;
    bool live = row < pc.nrows; // the same for a row's invocations; a dead row still reaches the barrier
#ifdef QKV
    // The part this row belongs to: its first output element and rows.
    uint pbase = 0u, prows = 0u, prow = 0u;
    if (row < pc.nq) {
        pbase = 0u, prows = pc.nq, prow = row;
    } else if (row >= pc.kstart && row < pc.kstart + pc.nk) {
        pbase = pc.mtok * pc.nq, prows = pc.nk, prow = row - pc.kstart;
    } else if (row >= pc.vstart) {
        pbase = pc.mtok * (pc.nq + pc.nk), prows = pc.nrows - pc.vstart, prow = row - pc.vstart;
    } else {
        live = false; // padding between the parts
    }
#endif
    const uint l = gl_LocalInvocationID.x % LANES; // the invocation's lane in its row
    const uint t0 = gl_WorkGroupID.z * NT;
    const uint nt = min(NT, pc.ntok - t0);
    float acc[NT * NW];
    for (uint i = 0u; i < NT * NW; i++) {
        acc[i] = 0.0;
    }
#if defined(Q8_0_ACT)
    const uint nb = live ? pc.ncols / 32u : 0u;
#ifdef NORM_IN
    const float nscale = norm_factor(pc.xoff + (pc.ncols / 32u) * 9u, l, rsub);
#define ACT_D(word) round_f16(uintBitsToFloat(word) * nscale) // binary16, as quantize_q8_0 stores it
#else
#define ACT_D(word) uintBitsToFloat(word)
#endif
    for (uint b = l; b < nb; b += LANES) {
        for (uint s = 0u; s < NW; s++) {
            // The block's bytes as whole words, each loaded once (bw.glsl).
#if defined(W_Q8_0)
            const uint wb = (row * nb + b) * 34u;
            const bool odd = (wb & 2u) != 0u;
            uint blk[9];
            BW_LOAD(blk, 9u, s, wb);
            const float dw = f16_to_f32(BW_D(blk, odd));
            uint wq[8];
            for (uint k = 0u; k < 8u; k++) {
                wq[k] = BW_AT2(blk, odd, k);
            }
#elif defined(W_Q5_0)
            const uint wb = (row * nb + b) * 22u;
            const bool odd = (wb & 2u) != 0u;
            uint blk[6];
            BW_LOAD(blk, 6u, s, wb);
            const float dw = f16_to_f32(BW_D(blk, odd));
            const uint qh = BW_AT2(blk, odd, 0u);
            uint wq[4];
            for (uint k = 0u; k < 4u; k++) {
                wq[k] = BW_AT2(blk, odd, k + 1u);
            }
#elif defined(W_Q4_1) || defined(W_Q5_1)
#if defined(W_Q4_1)
            const uint wb = (row * nb + b) * 20u;
            uint blk[5];
            BW_LOAD(blk, 5u, s, wb);
            const uint q0 = 1u;
#else
            const uint wb = (row * nb + b) * 24u;
            uint blk[6];
            BW_LOAD(blk, 6u, s, wb);
            const uint qh = blk[1];
            const uint q0 = 2u;
#endif
            const uint dm = blk[0];
            const float dw = f16_to_f32(dm & 0xffffu), mw = f16_to_f32(dm >> 16);
            uint wq[4];
            for (uint k = 0u; k < 4u; k++) {
                wq[k] = blk[q0 + k];
            }
#else
            const uint wb = (row * nb + b) * 18u;
            const bool odd = (wb & 2u) != 0u;
            uint blk[5];
            BW_LOAD(blk, 5u, s, wb);
            const float dw = f16_to_f32(BW_D(blk, odd));
            uint wq[4];
            for (uint k = 0u; k < 4u; k++) {
                wq[k] = BW_AT2(blk, odd, k);
            }
#endif
            for (uint j = 0u; j < nt; j++) {
                const uint ab = pc.xoff + ((t0 + j) * nb + b) * ABW;
                const float da = ACT_D(xq[ab]);
                int isum = 0;
#if defined(W_Q8_0)
                for (uint k = 0u; k < 8u; k++) {
                    isum += sdot4(wq[k], xq[ab + 1u + k]);
                }
                acc[s * NT + j] += float(isum) * (dw * da);
#elif defined(W_Q5_0)
                for (uint k = 0u; k < 4u; k++) {
                    // activations 4k..4k+3 and 16+4k..
                    isum += sdot4(unbias(q5_lo(wq[k], qh, k), 16u), xq[ab + 1u + k]) +
                            sdot4(unbias(q5_hi(wq[k], qh, k), 16u), xq[ab + 5u + k]);
                }
                acc[s * NT + j] += (dw * da) * float(isum);
#elif defined(W_Q4_1) || defined(W_Q5_1)
                const float sa = uintBitsToFloat(xq[ab + 1u]);
                for (uint k = 0u; k < 4u; k++) {
                    // activations 4k..4k+3 and 16+4k.. (levels 0..31: positive bytes)
#if defined(W_Q5_1)
                    isum += sdot4(q5_lo(wq[k], qh, k), xq[ab + 2u + k]) + sdot4(q5_hi(wq[k], qh, k), xq[ab + 6u + k]);
#else
                    isum += sdot4(wq[k] & 0x0f0f0f0fu, xq[ab + 2u + k]) + sdot4((wq[k] >> 4) & 0x0f0f0f0fu, xq[ab + 6u + k]);
#endif
                }
                // ggml's (d·da)·isum + m·s, rounded after each operation.
                precise float v = (dw * da) * float(isum) + mw * sa;
                acc[s * NT + j] += v;
#elif defined(W_IQ4_NL)
                // Q4_0's layout; the indices pick levels from the table.
                for (uint k = 0u; k < 4u; k++) {
                    const uint lo = xq[ab + 1u + k];
                    const uint hi = xq[ab + 5u + k];
                    for (uint i = 0u; i < 4u; i++) {
                        const uint q = ubyte(wq[k], i);
                        isum += IQ4_LEVELS[q & 15u] * sbyte(lo, i) + IQ4_LEVELS[q >> 4] * sbyte(hi, i);
                    }
                }
                acc[s * NT + j] += (da * dw) * float(isum);
#else
                for (uint k = 0u; k < 4u; k++) {
                    isum += sdot4(unbias(wq[k] & 0x0f0f0f0fu, 8u), xq[ab + 1u + k]) +
                            sdot4(unbias((wq[k] >> 4) & 0x0f0f0f0fu, 8u), xq[ab + 5u + k]);
                }
                acc[s * NT + j] += (float(isum) * dw) * da;
#endif
            }
        }
    }
#elif defined(Q8_K_ACT)
    const uint nsb = pc.ncols / 256u;
#ifdef NORM_IN
    const float nscale = norm_factor(pc.xoff + nsb * 73u, l, rsub);
#define ACT_DK(word) (uintBitsToFloat(word) * nscale) // Q8_K's float32 scale
#else
#define ACT_DK(word) uintBitsToFloat(word)
#endif
#if defined(W_Q4_K) && !defined(TWO_WEIGHTS)
    // One weight, rows of at most LANES chunk pairs: lane p takes pair p
    // (super-block p/4, chunks j = 2·(p%4) and j + 1, which share their
    // level bytes: kq4_pair), the whole row in one step whose loads are
    // in flight together, where a chunk a lane took a 2048-column row on
    // 32 lanes in two dependent steps. With pairs for every Q4_K row
    // (H200, Q4_K_M decode, µs a token): QKV 163 → 149, attention output
    // 153 → 142, but the FFN down (88 pairs on 64 lanes, two steps still)
    // 110 → 117 and the gate·up (two weights' loads in flight a lane)
    // 313 → 327; so those keep chunks.
    if (nsb * 4u <= LANES) {
        const uint p = l, sb = p >> 2, j = (p & 3u) * 2u;
        if (live && p < nsb * 4u) {
            const uint s = 0u; // the one weight
            uint lo[8], hi[8], f;
            uvec2 sm;
            kq4_pair(s, row, nsb, sb, j, lo, hi, f, sm);
            const float dw = f16_to_f32(f), dmin = f16_to_f32(f >> 16);
            const int sc0 = int(sm.x & 0xffffu), mn0 = int(sm.x >> 16), sc1 = int(sm.y & 0xffffu), mn1 = int(sm.y >> 16);
            for (uint t = 0u; t < nt; t++) {
                const uint ab = pc.xoff + ((t0 + t) * nsb + sb) * 73u;
                const float dy = ACT_DK(xq[ab]);
                int is0 = 0, is1 = 0;
                for (uint k = 0u; k < 8u; k++) {
                    is0 += sdot4(lo[k], xq[ab + 1u + 8u * j + k]); // levels 0..31: positive bytes
                    is1 += sdot4(hi[k], xq[ab + 9u + 8u * j + k]);
                }
                const int bs = mn0 * kq_bsum(xq[ab + 65u + j]) + mn1 * kq_bsum(xq[ab + 66u + j]);
                // ggml's (d·dy)·Σ(scale·isum) − (dmin·dy)·Σ(min·bsum), the
                // sums exact integers over the pair.
                precise float v = (dw * dy) * float(sc0 * is0 + sc1 * is1) - (dmin * dy) * float(bs);
                acc[s * NT + t] += v;
            }
        }
    } else // the chunks' loop below
#endif
    // Chunk c: super-block c/8, 32-value sub-block c%8.
    for (uint c = l; live && c < nsb * 8u; c += LANES) {
        const uint sb = c >> 3, j = c & 7u;
        for (uint s = 0u; s < NW; s++) {
#if defined(LATTICE)
            // The chunk's 32 weights as signed bytes, groups 0–1 in wq[0..3]
            // with scale ls.x, groups 2–3 in wq[4..7] with ls.y.
            const uint wb = (row * nsb + sb) * LATTICE_BYTES;
            const float dw = lattice_d(s, wb);
            uint wq[8];
            uint sc[4];
            for (uint g = 0u; g < 4u; g++) {
                const uvec2 q = lattice_group(s, wb, j, g, sc[g]);
                wq[2u * g] = q.x;
                wq[2u * g + 1u] = q.y;
            }
#ifdef TERNARY
            const ivec2 ls = ivec2(1);
#else
            const ivec2 ls = ivec2(2u * sc[0] + 1u, 2u * sc[2] + 1u);
#endif
            for (uint t = 0u; t < nt; t++) {
                const uint ab = pc.xoff + ((t0 + t) * nsb + sb) * 73u;
                const float dy = ACT_DK(xq[ab]);
                int is0 = 0, is1 = 0;
                for (uint k = 0u; k < 4u; k++) {
                    is0 += sdot4(wq[k], xq[ab + 1u + 8u * j + k]);
                    is1 += sdot4(wq[k + 4u], xq[ab + 5u + 8u * j + k]);
                }
                precise float v = LATTICE_DOT(dw, dy, ls.x * is0 + ls.y * is1);
                acc[s * NT + t] += v;
            }
#elif defined(W_Q4_K) || defined(W_Q5_K)
            uint wq[8], f, sm;
            kq_chunk(s, row, nsb, sb, j, wq, f, sm);
            const float dw = f16_to_f32(f), dmin = f16_to_f32(f >> 16);
            const int sc = int(sm & 0xffffu), mn = int(sm >> 16);
            for (uint t = 0u; t < nt; t++) {
                const uint ab = pc.xoff + ((t0 + t) * nsb + sb) * 73u;
                const float dy = ACT_DK(xq[ab]);
                int isum = 0;
                for (uint k = 0u; k < 8u; k++) {
                    isum += sdot4(wq[k], xq[ab + 1u + 8u * j + k]); // levels 0..31: positive bytes
                }
                const int bsum = kq_bsum(xq[ab + 65u + j]);
                precise float v = (dw * dy) * float(sc * isum) - (dmin * dy) * float(mn * bsum);
                acc[s * NT + t] += v;
            }
#elif defined(W_Q2_K) || defined(W_Q3_K)
            // Chunk j holds two 16-value groups (2j, 2j+1) with their own
            // scales, so the integer sum is kept per group, as for Q6_K.
            uint wq[8], f, sm;
            kq_chunk(s, row, nsb, sb, j, wq, f, sm);
            const float dw = f16_to_f32(f);
#if defined(W_Q2_K)
            const float dmin = f16_to_f32(f >> 16);
            const int sc0 = int(sm & 15u), m0 = int((sm >> 4) & 15u), sc1 = int((sm >> 8) & 15u), m1 = int(sm >> 12);
#else
            const ivec2 scp = kq_pair_scales(sm);
            const int sc0 = scp.x, sc1 = scp.y;
#endif
            for (uint t = 0u; t < nt; t++) {
                const uint ab = pc.xoff + ((t0 + t) * nsb + sb) * 73u;
                const float dy = ACT_DK(xq[ab]);
                int is0 = 0, is1 = 0;
                for (uint k = 0u; k < 4u; k++) {
                    is0 += sdot4(wq[k], xq[ab + 1u + 8u * j + k]);
                    is1 += sdot4(wq[k + 4u], xq[ab + 5u + 8u * j + k]);
                }
#if defined(W_Q2_K)
                // The mins against the activations' 16-value sums (word 65
                // + j holds groups 2j and 2j+1), as ggml's summs.
                const uint bs = xq[ab + 65u + j];
                const int summ = m0 * bitfieldExtract(int(bs), 0, 16) + m1 * bitfieldExtract(int(bs), 16, 16);
                precise float v = (dw * dy) * float(sc0 * is0 + sc1 * is1) - (dmin * dy) * float(summ);
#else
                precise float v = (dw * dy) * float(sc0 * is0 + sc1 * is1);
#endif
                acc[s * NT + t] += v;
            }
#elif defined(W_IQ4_XS)
            // The levels come from the table as signed bytes (kq_chunk).
            uint wq[8], f, sm;
            kq_chunk(s, row, nsb, sb, j, wq, f, sm);
            const float dw = f16_to_f32(f);
            const int ls = kq_pair_scales(sm).x;
            for (uint t = 0u; t < nt; t++) {
                const uint ab = pc.xoff + ((t0 + t) * nsb + sb) * 73u;
                const float dy = ACT_DK(xq[ab]);
                int isum = 0;
                for (uint k = 0u; k < 8u; k++) {
                    isum += sdot4(wq[k], xq[ab + 1u + 8u * j + k]);
                }
                // The CPU's (d·dy)·Σ(ls·isum) over the super-block, taken per chunk.
                precise float v = (dw * dy) * float(ls * isum);
                acc[s * NT + t] += v;
            }
#else // W_Q6_K
            uint wq[8], f, sm;
            kq_chunk(s, row, nsb, sb, j, wq, f, sm);
            const float dw = f16_to_f32(f);
            const ivec2 sc = kq_pair_scales(sm);
            for (uint t = 0u; t < nt; t++) {
                const uint ab = pc.xoff + ((t0 + t) * nsb + sb) * 73u;
                const float dy = ACT_DK(xq[ab]);
                int is0 = 0, is1 = 0;
                for (uint k = 0u; k < 4u; k++) {
                    is0 += sdot4(wq[k], xq[ab + 1u + 8u * j + k]);
                    is1 += sdot4(wq[k + 4u], xq[ab + 5u + 8u * j + k]);
                }
                precise float v = (dw * dy) * float(sc.x * is0 + sc.y * is1);
                acc[s * NT + t] += v;
            }
#endif
        }
    }
#else
#if defined(W_F16) || defined(W_BF16)
    // Even rows: a word (two 16-bit weights) per invocation and step.
    const bool pairs = (pc.ncols & 1u) == 0u;
    if (pairs) {
        for (uint k = 2u * l; live && k < pc.ncols; k += 2u * LANES) {
            for (uint s = 0u; s < NW; s++) {
                const uint wv = wword(s, (row * pc.ncols + k) >> 1);
#if defined(W_F16)
                const float w0 = f16_to_f32(wv & 0xffffu), w1 = f16_to_f32(wv >> 16);
#else
                const float w0 = uintBitsToFloat(wv << 16), w1 = uintBitsToFloat(wv & 0xffff0000u);
#endif
                for (uint j = 0u; j < nt; j++) {
                    const uint xi = pc.xoff + (t0 + j) * pc.ncols + k;
                    acc[s * NT + j] += w0 * x[xi] + w1 * x[xi + 1u];
                }
            }
        }
    }
    for (uint k = pairs ? pc.ncols : l; live && k < pc.ncols; k += LANES) {
#else
    for (uint k = l; live && k < pc.ncols; k += LANES) {
#endif
        for (uint s = 0u; s < NW; s++) {
            const uint i = row * pc.ncols + k;
#if defined(W_F32)
            const float wv = uintBitsToFloat(wword(s, i));
#elif defined(W_F16)
            const float wv = f16_to_f32(wu16(s, 2u * i));
#elif defined(W_BF16)
            const float wv = uintBitsToFloat(wu16(s, 2u * i) << 16);
#else
#error "define a weight type"
#endif
            for (uint j = 0u; j < nt; j++) {
                acc[s * NT + j] += wv * x[pc.xoff + (t0 + j) * pc.ncols + k];
            }
        }
    }
#endif
    // Reduce each of the nt·NW sums: within each subgroup, then the
    // subgroups' partials (one word each in red) by the invocation that
    // writes the token's output. Two barriers, whatever WG is.
    for (uint s = 0u; s < NW; s++) {
        for (uint j = 0u; j < nt; j++) {
            const float v = subgroupAdd(acc[s * NT + j]);
            if (subgroupElect()) {
                red[(s * NT + j) * WG + gl_SubgroupID] = v;
            }
        }
    }
    barrier();
    // A row's subgroups are spr consecutive ones (LANES is a multiple of
    // the subgroup size).
    const uint spr = gl_NumSubgroups / ROWS, sg0 = rsub * spr;
    float sums[NW];
    if (live && l < nt) {
        for (uint s = 0u; s < NW; s++) {
            float v = red[(s * NT + l) * WG + sg0];
            for (uint k = 1u; k < spr; k++) {
                v += red[(s * NT + l) * WG + sg0 + k];
            }
            sums[s] = v;
        }
    }
    if (live && l < nt) {
#ifdef QKV
        const uint o = pbase + (t0 + l) * prows + prow;
#else
        const uint o = (t0 + l) * pc.dstride + row;
#endif
        const float v = sums[0];
#if defined(ADD)
        d[pc.doff + o] = v + e[pc.eoff + o];
#elif defined(BIAS)
        d[pc.doff + o] = v + e[pc.eoff + row];
#elif defined(GATEUP)
        const float g = v;
        d[pc.doff + o] = (g / (1.0 + exp(-g))) * sums[1];
#elif defined(GEGLU)
        d[pc.doff + o] = gelu_f16table(v) * sums[1];
#else
        d[pc.doff + o] = v;
#endif
    }
#if defined(OUT_Q8_0) || defined(OUT_Q8_1) || defined(OUT_Q8_K) || defined(NORM_OUT)
    // One token (a decode step): rows row0 … are elements of its row.
    memoryBarrierBuffer();
    barrier(); // the workgroup's rows are written and visible
    const uint blk = row0 / QBLOCK;
    if (gl_LocalInvocationID.x == 0u) {
#ifdef NORM_OUT
        tail = atomicAdd(cnt[blk], ROWS) % QBLOCK == QBLOCK - ROWS; // rows, modulo a block
#else
        const uint per = QBLOCK / ROWS; // workgroups a block
        tail = atomicAdd(cnt[blk], 1u) % per == per - 1u;
#endif
    }
    barrier();
    if (tail) { // uniform: the whole workgroup
        memoryBarrierBuffer();
#if defined(NORM_OUT) && defined(NORM_K)
        // 4 rows an invocation (WG is 64): its u in registers and its Σh²
        // of the 4 in index order; the super-block; then a block's (32
        // rows) Σh² as the sum of its 8 invocations' in order, by 8
        // invocations.
        const uint t = gl_LocalInvocationID.x, r0 = QBLOCK * blk;
        precise float hh = 0.0;
        vec4 uv;
        for (uint j = 0u; j < 4u; j++) {
            const uint i = 4u * t + j;
            const bool here = r0 + i < pc.nrows;
            const float h = here ? d[pc.doff + r0 + i] : 0.0;
            hh += h * h;
            uv[j] = here ? h * nw[pc.nwoff + r0 + i] : 0.0;
        }
        hs[t] = hh;
        q8k_quads(uv, pc.qoff + blk * QWORDS); // its barriers publish hs
        const uint so = pc.qoff + (pc.nrows / QBLOCK) * QWORDS; // the sums (per 32 rows) from word so
        if (t < 8u) {
            precise float ss = 0.0;
            for (uint k = 0u; k < 8u; k++) {
                ss += hs[8u * t + k];
            }
            qa[so + 8u * blk + t] = floatBitsToUint(ss);
        }
#elif defined(NORM_OUT)
        const uint t = gl_LocalInvocationID.x;
        const bool live32 = t < 32u && 32u * blk + t < pc.nrows;
        const float h = live32 ? d[pc.doff + 32u * blk + t] : 0.0;
        if (t < 32u) {
            hs[t] = h;
        }
        q8_lanes(live32 ? h * nw[pc.nwoff + 32u * blk + t] : 0.0, live32, t, pc.qoff + blk * BW); // ends with a barrier
        const uint nbr = pc.nrows / 32u, so = pc.qoff + nbr * BW; // the blocks' sums from word so
        if (t == 0u) {
            precise float ss = 0.0;
            for (uint j = 0u; j < 32u; j++) {
                ss += hs[j] * hs[j];
            }
            qa[so + blk] = floatBitsToUint(ss);
        }
#elif defined(OUT_Q8_K)
        const uint b = pc.doff + QBLOCK * blk + 4u * gl_LocalInvocationID.x;
        q8k_quads(vec4(d[b], d[b + 1u], d[b + 2u], d[b + 3u]), pc.eoff + blk * QWORDS);
#else
        const uint t = gl_LocalInvocationID.x;
        const bool live32 = t < 32u && 32u * blk + t < pc.nrows;
        q8_lanes(live32 ? d[pc.doff + 32u * blk + t] : 0.0, live32, t, pc.eoff + blk * BW);
#endif
    }
#endif
}
