// Tiled matrix × matrix for batches (prefill): the products, epilogues,
// push constants, bindings and numerics of matmul.comp, computed in tiles.
// A workgroup of 256 invocations computes 64 weight rows × 64 tokens; the
// weights and activations of SB = 4 32-value blocks (quantized types) or
// of 32 columns (float types) at a time are staged in shared memory, each
// read from memory once per tile instead of once per row (activations) or
// per 8 tokens (weights), and each invocation computes 4 rows × 4 tokens
// from them, four int8 products at a time (sdot.glsl; exact integer sums).
//
// Numerics are matmul.comp's: the same integer sum per block and float
// expression per block, blocks (or columns) summed in the same order.
// The K-quants Q2_K … Q6_K and IQ4_XS (which matmul.comp lacks) take
// Q8_K activations and stage 32-value chunks as blocks (kquant.glsl):
// each chunk's term is matvec.comp's, added in chunk order — except in
// the residual (ADD) tiles of Q4_K, Q5_K and Q6_K, which form a float
// term a stage of four chunks from their integer sums (STAGE_SUMS).
//
// Workgroup x (then y) is the row tile, z the token tile.
//
// With COOP and F16 weights, the products are summed by tensor cores
// (16×16×16 binary16 products into float32, staged 64 columns at a time):
// their order and intermediate rounding are the hardware's, so the sums
// are not the float path's bits (TestMatMul's summation-order bound holds
// them, and the models the end-to-end rule).
//
// With COOP (quantized weights, NVIDIA's VK_NV_cooperative_matrix in
// 32-wide subgroups) a block's integer sums come from tensor cores
// instead: each of the 8 subgroups multiplies Q_FR 16-row slices of the
// staged int8 weights by Q_FT 16-token slices of the activations into
// 16×16 int32 sums (exact, as sdot4's), loads the block's scales as
// matrices of the same shape (a stride of 0 repeats a row's scale along
// its row, a token's down its column) and applies the block's float
// expression element by element to float32 accumulator matrices, in
// block order — so the bits are those of the sdot4 path. The gate·up of
// the 32-value block types takes 64 rows × 128 tokens (Q_TT). The
// accumulators go through the subgroup's part of shared memory once, at
// the end, to the epilogue's (row, token) layout.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
// Loops over the NW weights are unrolled (a rolled one indexes the sums
// at run time): on the H100 the Q4_0 prefill went from 15.6k to 21.4k
// tokens/s.
#extension GL_EXT_control_flow_attributes : require
#ifdef COOP
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256; // must be 256 (16 row groups × 16 token groups), 512 with F16_SPLIT

layout(push_constant) uniform Push {
    uint ncols, nrows, ntok;
    uint xoff;    // x: element offset (float types) or word offset (activation scratch)
    uint doff;    // d: element offset
    uint eoff;    // ADD, BIAS: element offset of e
    uint dstride; // elements between tokens in d (and e)
#if defined(OUT_Q8_0) || defined(OUT_Q8_1)
    uint qoff;    // word offset of the FFN down's activations in qa
#endif
} pc;

layout(binding = 0) readonly buffer Wt { uint w[]; };
#ifdef KQ_F16
#if !defined(COOP) || !defined(W_Q4_K) || !(defined(GATEUP) || defined(GEGLU))
#error KQ_F16 is for Q4_K gate·up tiles on tensor cores
#endif
// Q4_K's tensor-core gate·up tiles (shadergen sets KQ_F16 for them)
// decode the weights to binary16 as they stage them and take
// binary16-paired activations: the F16 tiles with another fetch and
// store (kq16_fetch / kq16_store). Each weight
// is d·scale·q − dmin·min in float32 (both products exact) rounded to
// nearest even binary16 (RoundingModeRTE below); the products are exact
// in float32 and summed in the tensor cores' order, as F16's. A numerics
// change against the int8 ways (Q8_K activations, a float term a chunk),
// taken because the int8 gate·up's per-chunk float terms bound it (41%
// of a Q4_K_M prefill step at 73 TFLOP/s against Q4_0's 127; decisions.md
// "Q4_K gate·up on tensor cores in binary16").
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 16); // RoundingModeRTE, 16-bit
#endif
#if defined(KQ_F16)
// binary16 activations, as F16 weights take
#elif defined(W_Q8_0) || defined(W_Q4_0) || defined(W_Q5_0)
#define QUANT_ACT
#define ABW 9u
#elif defined(W_Q4_1) || defined(W_Q5_1)
#define QUANT_ACT
#define Q8_1_ACT
#define ABW 10u
#elif defined(W_Q4_K) || defined(W_Q5_K) || defined(W_Q6_K) || defined(W_Q2_K) || defined(W_Q3_K) || defined(W_IQ4_XS)
// K-quants and IQ4_XS: 32-value chunks of 256-value super-blocks
// (kquant.glsl), against Q8_K activations (quantize_q8k: 73 words per
// super-block).
#define QUANT_ACT
#define Q8_K_ACT
#if defined(W_Q4_K) || defined(W_Q5_K)
#define KQ_MINS // a min per chunk, against the activations' chunk sums
#elif defined(W_Q2_K)
#define KQ_GROUP_MINS // a min per 16-value group, against the groups' sums
#endif
#endif
#ifdef QUANT_ACT
layout(binding = 1) readonly buffer Xq { uint xq[]; };
#else
layout(binding = 1) readonly buffer X { float x[]; };
#endif
layout(binding = 2) buffer D { float d[]; };
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
#if defined(OUT_Q8_0) || defined(OUT_Q8_1)
// Variants OUT_Q8_0 and OUT_Q8_1 (the gate·up of 32-value block weights,
// a prefill step's, on tensor cores or not) also write the FFN down's
// activations:
// the SwiGLU values of each token's 32-row blocks quantized as
// quantize_q8.comp would (store_q8_block, quantize.glsl: the same values,
// the same arithmetic, so the same bits), token t's block b at word qoff
// + (t·nrows/32 + b)·BW of qa. That saves the down's quantize dispatch,
// its barrier and its read of d (d is still written: a reader the
// recorder cannot serve from qa quantizes d itself). Needs nrows whole
// blocks (the host checks); with COOP a subgroup's Q_FR = 2 fragment rows
// are one block (the gate·up tiles' 64 rows in two subgroups).
#if !defined(GATEUP) || !defined(QUANT_ACT) || defined(Q8_K_ACT)
#error OUT_Q8_0 and OUT_Q8_1 are for the gate·up tiles of 32-value block weights
#endif
#ifdef OUT_Q8_0
#define BW 9u
#else
#define BW 10u
#endif
#define QOUT qa
layout(binding = 4) writeonly buffer QA { uint qa[]; };
#endif
#if defined(COOP) && (defined(W_F16) || defined(KQ_F16))
// The F16 tensor-core tiles (and KQ_F16's): F16_TR rows × F16_TT tokens
// a workgroup, its 8 subgroups F16_SGR along the rows and 8 / F16_SGR along the tokens,
// each summing F16_FR × F16_FT 16×16 fragments per weight (F16_FR weight
// tiles and F16_FT token tiles loaded per 16 columns for F16_FR·F16_FT
// products). Measured on the H200 (TinyLlama shape, 512 tokens, session
// 16): with two weights, 64 rows × 128 tokens in 2×2 fragments (gate·up
// 239 µs; 274 at 128 rows × 64 tokens, 2×2); with one, 64 × 64 in 1×2 (at
// 128 × 64 fewer workgroups than multiprocessors: FFN down 153 against
// 144 µs, attention output 70 against 61). The host dispatches a
// workgroup per 64 rows and per F16_TT tokens (coopPairTokens).
#ifndef F16_TR
#define F16_TR 64u
#endif
#ifdef TWO_WEIGHTS
#ifndef F16_TT
#define F16_TT 128u
#endif
#ifndef F16_SGR
#define F16_SGR 2u
#endif
#endif
#ifndef F16_TT
#define F16_TT 64u
#endif
#ifndef F16_SGR
#define F16_SGR 4u
#endif
// F16_SPLIT (two weights): 512 invocations, each subgroup summing one
// weight's fragments (its 8 subgroups F16_SGR along the rows), so a
// subgroup holds half the accumulators of the 256-invocation tile and
// the multiprocessor runs 16 warps instead of 8 (113 registers, one
// workgroup). Measured on the H200 (session 24, TinyLlama pp512): F16
// gate·up 4.7 → 4.3 ms a step, pp512 38.4–39.0k → 39.6–40.5k; Q4_K's
// KQ_F16 gate·up 4.6 → 4.8 ms (its decoding on half the invocations),
// 5.35 ms with it on all of them (a quarter of a row's group a task), so
// shadergen sets it for F16 only.
#ifdef F16_SPLIT
#ifndef TWO_WEIGHTS
#error F16_SPLIT is for two weights
#endif
#define F16_NT 512u
#define F16_NACC (F16_FR * F16_FT)
#else
#define F16_NT 256u
#define F16_NACC (NW * F16_FR * F16_FT)
#endif
#define F16_FR (F16_TR / (16u * F16_SGR))
#define F16_FT (F16_TT / (16u * (8u / F16_SGR))) // even: the sums go out 32 tokens at a time
#define TR F16_TR
#define TT F16_TT
#elif defined(COOP) && defined(QUANT_ACT)
// The quantized tensor-core tiles: Q_TR rows × Q_TT tokens a workgroup,
// its 8 subgroups Q_SGR along the rows, each Q_FR × Q_FT 16×16 fragments
// per weight: with two weights of a 32-value block type (gate·up, GeGLU)
// 64 × 128 in 2×2 (as the F16 tiles: the host dispatches a workgroup per
// coopPairTokens), a shape shadergen names (Q_TR, Q_TT, Q_SGR: the host
// reads the first two), otherwise 64 × 64 in 1×2. Measured on the H200
// (TinyLlama shape, 512 tokens, session 17): the Q8_0 gate·up 288 → 250
// µs at 64 × 128, but Q4_K's 342 → 353 (its chunk factors and sums as
// four more matrices a fragment pair).
#if defined(TWO_WEIGHTS) && !defined(Q8_K_ACT)
#define Q_TR 64u
#define Q_TT 128u
#define Q_SGR 2u
#elif defined(Q_TR) // a one-weight tile shape from shadergen (Q_TR=, Q_TT=, Q_SGR=)
#else
#define Q_TR 64u
#define Q_TT 64u
#define Q_SGR 4u
#endif
#define Q_FR (Q_TR / (16u * Q_SGR))
#define Q_FT (Q_TT / (16u * (8u / Q_SGR))) // even: the sums go out 32 tokens at a time
#define TR Q_TR
#define TT Q_TT
#else
#define TR 64u // rows per tile
#define TT 64u // tokens per tile
#endif

#include "half.glsl"
#ifdef GEGLU
#include "gelu.glsl"
#endif
#ifdef BW
#include "quantize.glsl"
#endif

uint wword(uint s, uint i) {
#ifdef TWO_WEIGHTS
    return s == 0u ? w[i] : u[i];
#else
    return w[i];
#endif
}
uint wu16(uint s, uint off) { return (wword(s, off >> 2) >> ((off & 2u) * 8u)) & 0xffffu; }
uint wu32(uint s, uint off) {
    const uint sh = (off & 3u) * 8u;
    const uint lo = wword(s, off >> 2);
    return sh == 0u ? lo : (lo >> sh) | (wword(s, (off >> 2) + 1u) << (32u - sh));
}
#include "sdot.glsl"
#include "bw.glsl"
#ifdef W_IQ4_XS
#include "iq_tables.glsl"
#endif
#if defined(W_Q4_K) || defined(W_Q5_K) || (defined(W_F16) && defined(COOP))
// The weights as 16-byte quads too (Q4_K's and Q5_K's blocks are 144 and
// 176 bytes, and a row starts on a block): kquant.glsl reads a chunk's
// header and levels a quad a load, the F16 tensor-core tiles eight
// columns.
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

#ifdef QUANT_ACT
// SB blocks are staged at a time, block-major: block bb of row r of
// weight s at (s·SB + bb)·TR + r, of token t at bb·TT + t.
#if defined(COOP) && defined(W_Q6_K)
// Q6_K's two 16-value groups per chunk have their own scales, so the
// tensor cores take two products per chunk, the token's chunk staged as
// 16 values, 16 zeros, 16 values (AW = 12 words): the first product
// reads words 0–7 (the first group's sums), the second words 4–11.
#define Q6_HALVES
#define AW 12u
#ifdef TWO_WEIGHTS
#define SB 2u // shared memory: 4 would need 50 KiB with two weights
#endif
#endif
#if !defined(AW) && defined(COOP) && !(defined(TWO_WEIGHTS) && !defined(Q8_K_ACT))
// The tensor-core tiles of 64 tokens stage a token's chunk in 12 words
// (8, then 4 unused), as the weights' blocks (WS): on the H200 (session
// 18, pp512) Q8_0 30.8k → 31.5k, Q4_0 33.8k → 34.5k, Q4_K_M 26.5k → 26.7k.
// The gate·up tiles of 128 tokens keep 8: 12 would need 50 KiB.
#define AW 12u
#endif
#ifndef AW
#define AW 8u // words per staged activation chunk
#endif
#ifndef SB
#define SB 4u
#endif
#ifdef COOP
// A staged weight block takes WS = 12 words (its 8, then 4 unused): rows
// of 48 bytes spread a warp's stores, and the tensor cores' fragment loads
// of 16 rows, over twice the banks that rows of 32 bytes reach. Measured
// on the H200 (session 18, pp512): Q8_0 30.0k → 30.8k, Q4_K_M 26.1k →
// 26.5k, Q4_0 33.1k → 33.4k; taking the rows rather than the blocks of a
// row in neighbouring invocations as well lost 12% (the loads from memory
// no longer coalesce).
#define WS 12u
// The sums go out through sw after the last stage (a subgroup's 16 rows ×
// 32 tokens, CS words a row, odd: a row per bank): an array of their own
// does not fit beside two weights' 64 rows and 128 tokens in 48 KiB.
#define CS 33u
#define Q_SW (NW * SB * TR * WS > 8u * 16u * CS ? NW * SB * TR * WS : 8u * 16u * CS)
shared uint sw[Q_SW]; // a block: 32 int8 weights in 8 words
#else
#define WS 8u
shared uint sw[NW * SB * TR * WS]; // a block: 32 int8 weights in 8 words (OUT_Q8_0/OUT_Q8_1: TT × TR floats after the last stage, as many words)
#endif
#ifdef Q8_K_ACT
#if defined(W_Q6_K) || defined(W_Q3_K) || defined(W_Q2_K)
#define KGROUPS 2u // a scale per 16 values
#else
#define KGROUPS 1u
#endif
#if defined(KQ_MINS) || defined(KQ_GROUP_MINS)
#define KQ_SUMS // the activations' sums are staged (sbs)
#endif
#if (defined(W_Q4_K) || defined(W_Q5_K) || defined(W_Q6_K)) && defined(ADD)
// The residual matmuls' tiles (FFN down, attention output): a stage's
// chunks are one super-block's (SB is 4), so its d and dmin, and the
// activations' d, are the stage's: each (row, token) sums the stage's
// scale × chunk sums (and min × activation sums) as integers and forms
// its float term once a stage, not once a chunk:
//   (d·dy)·float(Σ sc·isum) − (dmin·dy)·float(Σ mn·bsum)
// (Q6_K: (d·dy)·float(Σ sc₀·isum₀ + sc₁·isum₁)). The integers stay below
// 2^31: 4·63·32·31·127 (Q5_K), 4·2·128·16·32·127 (Q6_K). Measured on the
// H200 (session 23, TinyLlama Q4_K_M pp512, µs a step): FFN down Q4_K
// 2 287 → 1 862, Q6_K 1 957 → 1 782, attention output 1 839 → 1 529.
// Not the others: the integer sums cost registers (Q4_K 71 → 94: two
// workgroups a multiprocessor instead of three), which put QKV's 320
// workgroups (2 560 rows) in two waves (2 119 → 2 467 µs a step), and
// gate·up past 128 (106 → 174: one workgroup; 7 147 → 7 570).
#define STAGE_SUMS
#endif
// A chunk's factors as kq_chunk gives them (binary16 d and dmin; scale
// and min), packed: the shared memory of the tensor-core variant with
// two weights holds no more.
shared uint sf[NW * SB * TR];
shared uint ssm[NW * SB * TR];
#ifdef KQ_SUMS
shared int sbs[SB * TT];          // the activation chunk's sum (KQ_GROUP_MINS: its two int16 group sums)
#endif
#else
shared float sdw[NW * SB * TR];   // its scale
#endif
#ifdef Q8_1_ACT
shared float smw[NW * SB * TR];   // its min
shared float ssa[SB * TT];        // the activation block's s
#endif
shared uint sa[SB * TT * AW];     // a token's block: 32 int8 activations
shared float sda[SB * TT];        // its scale
#elif defined(COOP)
// F16 weights on tensor cores: FC columns a stage as binary16 pairs (the
// activations arrive as pairs of binary16-rounded values: round_f16x2),
// FS words a row (padded against bank conflicts; a multiple of 16 bytes).
// One weight's tiles take 128 columns a stage (half the barriers; 124
// registers, still two workgroups a multiprocessor), two weights' 64 (at
// 128 their shared memory would pass 48 KiB). Measured on the H200
// (session 23, TinyLlama F16 pp512): 37.0–37.3k → 38.0–38.6k tokens/s;
// 32 columns: slower, for one weight (FFN down 147 → 195 µs) and two.
#ifndef FC
#ifdef TWO_WEIGHTS
#define FC 64u
#else
#define FC 128u
#endif
#endif
#define FS (FC / 2u + 4u)
// The sums go out through sw (a subgroup's 16 rows × 32 tokens, F16_CS
// words a row, odd: a row per bank), after the last stage: an array of
// their own would not fit beside two weights' 64 rows and 128 tokens in
// 48 KiB.
#define F16_CS 33u
#define F16_SW (NW * TR * FS > 8u * 16u * F16_CS ? NW * TR * FS : 8u * 16u * F16_CS)
shared uint sw[F16_SW];
shared uint sa[TT * FS];
#else
shared float sw[NW * TR * 33]; // 32 columns per row (padded against bank conflicts)
shared float sa[TT * 33];
#endif

#if defined(COOP) && !defined(QUANT_ACT)
// The F16 tensor-core tiles' stage from column k0: each invocation's
// F16_WTASKS weight tasks (eight columns of a row, a quad of words) and
// F16_ATASKS activation tasks (eight columns of a token, four words).
// The activations come as binary16 pairs (round_f16x2, rms_norm_mul_f16x2:
// ceil(ncols / 2) words a token from word xoff), one uvec4 load a task
// where the rows are 16-byte aligned. Float32 activations packed here
// instead (twice the bytes and load instructions a stage) made the F16
// prefill 7% slower on the H200 with vec4 loads, 23% with two scalar
// loads a pair.
#ifdef KQ_F16
// KQ_F16: a stage (FC = 64 columns) is one 64-value group g of a Q4_K
// super-block: sub-block 2g's levels in the low nibbles of its 32 level
// bytes, 2g + 1's in the high ones. A task is half a row's group: the
// block's header quad (d, dmin, the 12 scale bytes) and one level quad
// (16 bytes: 32 values), two quads of pw; 8 registers a task against 16
// for eight F16 tasks' worth of columns. FC must stay 64 (two weights').
#define KQ16_TASKS ((NW * TR * 2u + F16_NT - 1u) / F16_NT)
#define F16_WTASKS (2u * KQ16_TASKS)
#else
#define F16_WTASKS ((NW * TR * (FC / 8u) + F16_NT - 1u) / F16_NT)
#endif
layout(binding = 1) readonly buffer XP4 { uvec4 xp4[]; };
#define F16_ATASKS ((TT * (FC / 8u) + F16_NT - 1u) / F16_NT)
#ifdef KQ_F16
void kq16_fetch(uint k0, uint row0, uint tid, inout uvec4 pw[F16_WTASKS]) {
    [[unroll]] for (uint u = 0u; u < KQ16_TASKS; u++) {
        const uint n = tid + F16_NT * u;
        const uint s = n / (2u * TR), r = (n / 2u) % TR, h = n % 2u, row = row0 + r;
        uvec4 hdr = uvec4(0u), lv = uvec4(0u); // past the rows: d = dmin = 0, every value 0
        if (n < NW * TR * 2u && row < pc.nrows) {
            const uint blk = (row * (pc.ncols / 256u) + k0 / 256u) * 9u; // 144-byte blocks: 9 quads
            hdr = wquad(s, blk);
            lv = wquad(s, blk + 1u + 2u * ((k0 / 64u) % 4u) + h);
        }
        pw[2u * u] = hdr;
        pw[2u * u + 1u] = lv;
    }
}

// kq16_pair is values q0 and q1 of a sub-block with factors dsc = d·scale
// and mmin = dmin·min as one word of binary16 (q0 in the low half).
uint kq16_pair(float dsc, float mmin, uint q0, uint q1) {
    return packFloat2x16(f16vec2(dsc * float(q0) - mmin, dsc * float(q1) - mmin));
}

// kq16_store decodes the stage's tasks into sw: half h's 16 low-nibble
// values are columns 16h … 16h + 15 of the stage (words 8h …), its 16
// high-nibble values columns 32 + 16h … (words 16 + 8h …).
void kq16_store(uint k0, uint tid, uvec4 pw[F16_WTASKS]) {
    const uint g = (k0 / 64u) % 4u;
    [[unroll]] for (uint u = 0u; u < KQ16_TASKS; u++) {
        const uint n = tid + F16_NT * u;
        if (n >= NW * TR * 2u) {
            continue;
        }
        const uint s = n / (2u * TR), r = (n / 2u) % TR, h = n % 2u;
        const uvec4 hdr = pw[2u * u], lv = pw[2u * u + 1u];
        const float dw = f16_to_f32(hdr.x), dmin = f16_to_f32(hdr.x >> 16);
        const uvec2 sm0 = scale_min(hdr.y, hdr.z, hdr.w, 2u * g), sm1 = scale_min(hdr.y, hdr.z, hdr.w, 2u * g + 1u);
        const float d0 = dw * float(sm0.x), m0 = dmin * float(sm0.y), d1 = dw * float(sm1.x), m1 = dmin * float(sm1.y);
        const uint base = (s * TR + r) * FS + 8u * h;
        [[unroll]] for (uint c = 0u; c < 4u; c++) {
            const uint q = lv[c];
            sw[base + 2u * c] = kq16_pair(d0, m0, q & 15u, (q >> 8) & 15u);
            sw[base + 2u * c + 1u] = kq16_pair(d0, m0, (q >> 16) & 15u, q >> 24 & 15u);
            sw[base + 16u + 2u * c] = kq16_pair(d1, m1, (q >> 4) & 15u, (q >> 12) & 15u);
            sw[base + 16u + 2u * c + 1u] = kq16_pair(d1, m1, (q >> 20) & 15u, q >> 28);
        }
    }
}
#endif
void f16_fetch(uint k0, uint row0, uint tok0, uint tid, inout uvec4 pw[F16_WTASKS], inout uvec4 pa[F16_ATASKS]) {
#ifdef KQ_F16
    kq16_fetch(k0, row0, tid, pw);
#else
    [[unroll]] for (uint u = 0u; u < F16_WTASKS; u++) {
        const uint n = tid + F16_NT * u;
        const uint s = n / (TR * (FC / 8u)), r = (n / (FC / 8u)) % TR, c8 = n % (FC / 8u);
        const uint row = row0 + r, k = k0 + 8u * c8;
        uvec4 v = uvec4(0u);
        if (n >= NW * TR * (FC / 8u)) {
            // no task
        } else if (row < pc.nrows && (pc.ncols & 7u) == 0u && k < pc.ncols) {
            // A row of a multiple of 8 columns starts on a quad.
            v = wquad(s, (row * pc.ncols + k) >> 3);
        } else if (row < pc.nrows) {
            for (uint c = 0u; c < 4u; c++) {
                const uint kc = k + 2u * c, i = row * pc.ncols + kc;
                if (kc < pc.ncols) {
                    v[c] = (pc.ncols & 1u) == 0u ? wword(s, i >> 1) : wu16(s, 2u * i) | (kc + 1u < pc.ncols ? wu16(s, 2u * i + 2u) << 16 : 0u);
                }
            }
        }
        pw[u] = v;
    }
#endif
    [[unroll]] for (uint u = 0u; u < F16_ATASKS; u++) {
        const uint n = tid + F16_NT * u;
        const uint t = n / (FC / 8u), c8 = n % (FC / 8u), tok = tok0 + t, k = k0 + 8u * c8;
        uvec4 v = uvec4(0u);
        if (n < TT * (FC / 8u) && tok < pc.ntok && k < pc.ncols) {
            const uint np = (pc.ncols + 1u) / 2u, i = pc.xoff + tok * np + k / 2u;
            if (((np | pc.xoff) & 3u) == 0u) {
                v = xp4[i >> 2];
            } else {
                for (uint c = 0u; c < 4u; c++) {
                    if (k + 2u * c < pc.ncols) {
                        v[c] = floatBitsToUint(x[i + c]);
                    }
                }
            }
        }
        pa[u] = v;
    }
}
#endif

#if defined(QUANT_ACT) && !defined(Q8_K_ACT)
// The 32-value block types' blocks: BLKB bytes, read as the BLKW whole
// words that hold them, each loaded once (bw.glsl): blocks of 18, 22 and
// 34 bytes start 0 or 2 bytes into their first word (odd), 20 and 24 at 0.
#if defined(W_Q8_0)
#define BLKB 34u
#define BLKW 9u
#elif defined(W_Q5_0)
#define BLKB 22u
#define BLKW 6u
#elif defined(W_Q4_1)
#define BLKB 20u
#define BLKW 5u
#elif defined(W_Q5_1)
#define BLKB 24u
#define BLKW 6u
#else // Q4_0
#define BLKB 18u
#define BLKW 5u
#endif
uint blk_byte(uint row, uint b, uint nb) { return (row * nb + b) * BLKB; }
bool blk_odd(uint row, uint b, uint nb) { return (blk_byte(row, b, nb) & 2u) != 0u; }

// blk_fetch loads block b of weight s's row (zeros past the matrix).
void blk_fetch(uint s, uint row, uint b, uint nb, out uint blk[BLKW]) {
    for (uint k = 0u; k < BLKW; k++) {
        blk[k] = 0u;
    }
    if (row < pc.nrows && b < nb) {
        BW_LOAD(blk, BLKW, s, blk_byte(row, b, nb));
    }
}

// blk_decode gives a block's 32 levels as signed bytes (q) and its scale
// (and min: Q4_1, Q5_1).
void blk_decode(uint blk[BLKW], bool odd, out uint q[8], out float dw, out float mw) {
    mw = 0.0;
#if defined(W_Q8_0)
    dw = f16_to_f32(BW_D(blk, odd));
    for (uint k = 0u; k < 8u; k++) {
        q[k] = BW_AT2(blk, odd, k);
    }
#else
#if defined(W_Q5_0)
    dw = f16_to_f32(BW_D(blk, odd));
    const uint qh = BW_AT2(blk, odd, 0u);
    const uint off = 16u;
#define QS_WORD(k) BW_AT2(blk, odd, (k) + 1u)
#elif defined(W_Q4_1) || defined(W_Q5_1)
#if defined(W_Q4_1)
    const uint qh = 0u;
#define QS_WORD(k) blk[(k) + 1u]
#else
    const uint qh = blk[1];
#define QS_WORD(k) blk[(k) + 2u]
#endif
    dw = f16_to_f32(blk[0] & 0xffffu);
    mw = f16_to_f32(blk[0] >> 16);
    const uint off = 0u;
#else // Q4_0
    dw = f16_to_f32(BW_D(blk, odd));
    const uint qh = 0u;
    const uint off = 8u;
#define QS_WORD(k) BW_AT2(blk, odd, k)
#endif
    // Value 4k+i is the low nibble of byte 4k+i, value 16+4k+i its high
    // nibble; Q5 types add bit 4k+i (16+4k+i) of qh (q5_lo/q5_hi, with qh
    // 0 for the 4-bit types), each level less its bias as a signed byte.
    for (uint k = 0u; k < 4u; k++) {
        const uint word = QS_WORD(k);
        const uint lo = q5_lo(word, qh, k), hi = q5_hi(word, qh, k);
        q[k] = off == 0u ? lo : unbias(lo, off);
        q[4u + k] = off == 0u ? hi : unbias(hi, off);
    }
#undef QS_WORD
#endif
}

// act_fetch loads token tok's block b of the activations: its ABW words
// (scale, Q8_1's s, 32 int8 values), zeros past the batch.
void act_fetch(uint tok, uint b, uint nb, out uint ab[ABW]) {
    for (uint k = 0u; k < ABW; k++) {
        ab[k] = 0u;
    }
    if (tok < pc.ntok && b < nb) {
        const uint at = pc.xoff + (tok * nb + b) * ABW;
        for (uint k = 0u; k < ABW; k++) {
            ab[k] = xq[at + k];
        }
    }
}

#if defined(COOP) && (defined(TWO_WEIGHTS) || defined(Q_PF))
// The tensor-core gate·up tiles fetch the next stage's blocks into
// registers (pw, pa) before this stage's products, so the loads are in
// flight while the tensor cores work: the tile has the multiprocessor to
// itself already (over 128 registers: one workgroup), so the registers
// (Q4_0 180 → 242, Q8_0 158 → 206) cost no occupancy. Measured on the
// H200 (session 23, TinyLlama pp512): Q8_0 33.4–33.8k → 35.7k tokens/s,
// Q4_0 37.3k → 39.1k; gate·up 250 → 202 µs a node (Q8_0). The one-weight
// tiles prefetch where shadergen sets Q_PF: the residual ones (ADD), in
// 64 rows × 128 tokens (session 28, H200, Q8_0 µs a node: FFN down 158
// → 138, attention output 69 → 63; 128 × 64 in 2 × 2: 140 and 64). The
// plain ones (QKV) keep 64 × 64 without: a prefetch costs them a
// workgroup a multiprocessor (85 → 114 µs), and the K and V projections'
// 256 rows make too few wider tiles (85 → 98).
#define Q_PREFETCH
#define Q_WTASKS ((NW * TR * SB + 255u) / 256u)
#define Q_ATASKS ((TT * SB + 255u) / 256u)
// q_fetch's tasks are the staging loops' (an invocation's u-th block of
// the weights and of the activations); a task past their count asks for
// a row (token) past the matrix, which fetches zeros.
void q_fetch(uint b0, uint row0, uint tok0, uint tid, uint nb, inout uint pw[Q_WTASKS][BLKW], inout uint pa[Q_ATASKS][ABW]) {
    [[unroll]] for (uint u = 0u; u < Q_WTASKS; u++) {
        const uint n = tid + 256u * u;
        const uint s = n / (TR * SB), r = (n / SB) % TR, bb = n % SB;
        blk_fetch(s, n < NW * TR * SB ? row0 + r : pc.nrows, b0 + bb, nb, pw[u]);
    }
    [[unroll]] for (uint u = 0u; u < Q_ATASKS; u++) {
        const uint n = tid + 256u * u;
        const uint t = n / SB, bb = n % SB;
        act_fetch(n < TT * SB ? tok0 + t : pc.ntok, b0 + bb, nb, pa[u]);
    }
}
#endif
#endif

// SWIGLU is GATEUP's value of gate sum g and up sum u, written once for
// emit and the OUT_Q8_0/OUT_Q8_1 epilogues (a macro: as a function it
// changed the other gate·ups' SPIR-V).
#define SWIGLU(g, u) (((g) / (1.0 + exp(-(g)))) * (u))

// The epilogue for the sum v of (row, tok), and u the up weight's sum
// (GATEUP, GEGLU).
void emit(uint row, uint tok, float v, float u) {
    const uint o = tok * pc.dstride + row;
#if defined(ADD)
    d[pc.doff + o] = v + e[pc.eoff + o];
#elif defined(BIAS)
    d[pc.doff + o] = v + e[pc.eoff + row];
#elif defined(GATEUP)
    d[pc.doff + o] = SWIGLU(v, u);
#elif defined(GEGLU)
    d[pc.doff + o] = gelu_f16table(v) * u;
#else
    d[pc.doff + o] = v;
#endif
}

void main() {
    const uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint row0 = tile * TR, tok0 = gl_WorkGroupID.z * TT;
    if (row0 >= pc.nrows) {
        return; // the whole workgroup
    }
    const uint tid = gl_LocalInvocationID.x;
#if defined(COOP) && !defined(QUANT_ACT)
    if (tok0 >= pc.ntok) {
        return; // the whole workgroup (the shader tests count 64-token tiles)
    }
    // Subgroup sg: rows srow + 16·i (i < F16_FR), tokens stok + 16·j
    // (j < F16_FT); the sums of weight s in cacc[(s·F16_FR + i)·F16_FT + j].
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#ifdef F16_SPLIT
    const uint sws = sg / 8u, sgl = sg % 8u; // its weight, its place among that weight's 8
    const uint srow = 16u * F16_FR * (sgl % F16_SGR), stok = 16u * F16_FT * (sgl / F16_SGR);
#else
    const uint srow = 16u * F16_FR * (sg % F16_SGR), stok = 16u * F16_FT * (sg / F16_SGR);
#endif
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> cacc[F16_NACC];
    [[unroll]] for (uint i = 0u; i < F16_NACC; i++) {
        cacc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    }
#elif defined(COOP)
    if (tok0 >= pc.ntok) {
        return; // the whole workgroup (the shader tests count 64-token tiles)
    }
    // Subgroup sg: rows srow + 16·i (i < Q_FR), tokens stok + 16·j
    // (j < Q_FT); the sums of weight s in cacc[(s·Q_FR + i)·Q_FT + j].
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint srow = 16u * Q_FR * (sg % Q_SGR), stok = 16u * Q_FT * (sg / Q_SGR);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> cacc[NW * Q_FR * Q_FT];
    [[unroll]] for (uint i = 0u; i < NW * Q_FR * Q_FT; i++) {
        cacc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    }
#else
    const uint tr = tid % 16u, tt = tid / 16u; // rows tr + 16i, tokens tt + 16j (acc[4i + j])
#endif
#if !defined(COOP)
    float acc[NW * 16];
    for (uint i = 0u; i < NW * 16u; i++) {
        acc[i] = 0.0;
    }
#endif
#ifdef QUANT_ACT
    const uint nb = pc.ncols / 32u;
#ifdef Q_PREFETCH
    uint pw[Q_WTASKS][BLKW], pa[Q_ATASKS][ABW];
    q_fetch(0u, row0, tok0, tid, nb, pw, pa);
#endif
    for (uint b0 = 0u; b0 < nb; b0 += SB) {
        // Stage SB blocks of every row and token, a block an invocation;
        // neighbours take a row's consecutive blocks (neighbouring bytes).
        // Unrolled (WG is 256): every task's loads in flight together.
        [[unroll]] for (uint u = 0u; u < (NW * TR * SB + 255u) / 256u; u++) {
            const uint n = tid + 256u * u;
            if (n >= NW * TR * SB) {
                continue;
            }
            const uint s = n / (TR * SB), r = (n / SB) % TR, bb = n % SB;
            const uint row = row0 + r, b = b0 + bb;
            uint q[8] = uint[8](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
#ifdef Q8_K_ACT
            uint f = 0u, sm = 0u;
            if (row < pc.nrows && b < nb) {
                kq_chunk(s, row, nb / 8u, b / 8u, b % 8u, q, f, sm);
            }
#else
            float dw = 0.0, mw = 0.0;
#ifdef Q_PREFETCH
            const uint blk[BLKW] = pw[u]; // fetched during the last stage
#else
            uint blk[BLKW];
            blk_fetch(s, row, b, nb, blk);
#endif
            if (row < pc.nrows && b < nb) {
                blk_decode(blk, blk_odd(row, b, nb), q, dw, mw);
            }
#endif
            const uint at = (s * SB + bb) * TR + r;
            for (uint k = 0u; k < 8u; k++) {
                sw[at * WS + k] = q[k];
            }
#ifdef Q8_K_ACT
            sf[at] = f;
            ssm[at] = sm;
#else
            sdw[at] = dw;
#endif
#ifdef Q8_1_ACT
            smw[at] = mw;
#endif
        }
        // Unrolled (WG is 256): every task's loads in flight together.
        [[unroll]] for (uint u = 0u; u < (TT * SB + 255u) / 256u; u++) {
            const uint n = tid + 256u * u;
            if (n >= TT * SB) {
                continue;
            }
            const uint t = n / SB, bb = n % SB, tok = tok0 + t, b = b0 + bb;
            const uint at = bb * TT + t;
            if (tok < pc.ntok && b < nb) {
#ifdef Q8_K_ACT
                // Chunk b % 8 of the token's super-block b / 8.
                const uint ab = pc.xoff + (tok * (nb / 8u) + b / 8u) * 73u, j = b % 8u;
                sda[at] = uintBitsToFloat(xq[ab]);
#if defined(KQ_MINS)
                sbs[at] = kq_bsum(xq[ab + 65u + j]);
#elif defined(KQ_GROUP_MINS)
                sbs[at] = int(xq[ab + 65u + j]);
#endif
#ifdef Q6_HALVES
                for (uint k = 0u; k < 4u; k++) {
                    sa[at * AW + k] = xq[ab + 1u + 8u * j + k];
                    sa[at * AW + 4u + k] = 0u;
                    sa[at * AW + 8u + k] = xq[ab + 5u + 8u * j + k];
                }
#else
                for (uint k = 0u; k < 8u; k++) {
                    sa[at * AW + k] = xq[ab + 1u + 8u * j + k];
                }
#endif
#else
#ifdef Q_PREFETCH
                const uint ab[ABW] = pa[u]; // fetched during the last stage
#else
                uint ab[ABW];
                act_fetch(tok, b, nb, ab);
#endif
                sda[at] = uintBitsToFloat(ab[0]);
#ifdef Q8_1_ACT
                ssa[at] = uintBitsToFloat(ab[1]);
#endif
                for (uint k = 0u; k < 8u; k++) {
                    sa[at * AW + k] = ab[ABW - 8u + k];
                }
#endif
            } else {
                sda[at] = 0.0;
#ifdef Q8_1_ACT
                ssa[at] = 0.0;
#endif
#ifdef KQ_SUMS
                sbs[at] = 0;
#endif
                for (uint k = 0u; k < AW; k++) {
                    sa[at * AW + k] = 0u;
                }
            }
        }
        barrier();
#ifdef Q_PREFETCH
        if (b0 + SB < nb) {
            q_fetch(b0 + SB, row0, tok0, tid, nb, pw, pa);
        }
#endif
#if defined(STAGE_SUMS) && defined(COOP)
        icoopmatNV<32, gl_ScopeSubgroup, 16, 16> cisb[NW * Q_FR * Q_FT]; // Σ sc·isum
#ifdef KQ_MINS
        icoopmatNV<32, gl_ScopeSubgroup, 16, 16> cmsb[NW * Q_FR * Q_FT]; // Σ mn·bsum
#endif
        [[unroll]] for (uint c = 0u; c < NW * Q_FR * Q_FT; c++) {
            cisb[c] = icoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0);
#ifdef KQ_MINS
            cmsb[c] = icoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0);
#endif
        }
#elif defined(STAGE_SUMS)
        int isb[NW * 16u]; // Σ sc·isum of (row, token) as acc
#ifdef KQ_MINS
        int msb[NW * 16u]; // Σ mn·bsum
#endif
        for (uint i = 0u; i < NW * 16u; i++) {
            isb[i] = 0;
#ifdef KQ_MINS
            msb[i] = 0;
#endif
        }
#endif
        // Blocks past the last are not added: +0 would turn a -0 sum to +0.
        for (uint bb = 0u; bb < min(SB, nb - b0); bb++) {
#ifdef COOP
            // The token side first, shared by the weights: each token
            // tile's activations and the block's scales as matrices of the
            // sums' shape (a stride of 0 repeats a token's scale down its
            // column).
            icoopmatNV<8, gl_ScopeSubgroup, 32, 16> mb[Q_FT]; // column-major: a token's block is a column
#ifdef Q6_HALVES
            icoopmatNV<8, gl_ScopeSubgroup, 32, 16> mb1[Q_FT];
#endif
#ifndef STAGE_SUMS
            fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> da[Q_FT];
#endif
#ifdef KQ_MINS
            icoopmatNV<32, gl_ScopeSubgroup, 16, 16> bs[Q_FT];
#endif
#ifdef Q8_1_ACT
            fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> sa1[Q_FT];
#endif
            [[unroll]] for (uint j = 0u; j < Q_FT; j++) {
                const uint at = bb * TT + stok + 16u * j;
                coopMatLoadNV(mb[j], sa, at * AW, AW, true);
#ifdef Q6_HALVES
                coopMatLoadNV(mb1[j], sa, at * AW + 4u, AW, true);
#endif
#ifndef STAGE_SUMS
                coopMatLoadNV(da[j], sda, at, 0u, false);
#endif
#ifdef KQ_MINS
                coopMatLoadNV(bs[j], sbs, at, 0u, false);
#endif
#ifdef Q8_1_ACT
                coopMatLoadNV(sa1[j], ssa, at, 0u, false);
#endif
            }
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                [[unroll]] for (uint i = 0u; i < Q_FR; i++) {
                    icoopmatNV<8, gl_ScopeSubgroup, 16, 32> ma;
                    const uint wat = (s * SB + bb) * TR + srow + 16u * i;
                    coopMatLoadNV(ma, sw, wat * WS, WS, false);
                    // The block's row scales: a stride of 0 repeats the
                    // row's scale along its row (column-major).
#if defined(Q8_K_ACT) && defined(STAGE_SUMS)
                    icoopmatNV<32, gl_ScopeSubgroup, 16, 16> msm; // the packed scale and min (uint bits)
                    coopMatLoadNV(msm, ssm, wat, 0u, true);
#elif defined(Q8_K_ACT)
                    icoopmatNV<32, gl_ScopeSubgroup, 16, 16> mf, msm; // the packed factors (uint bits)
                    coopMatLoadNV(mf, sf, wat, 0u, true);
                    coopMatLoadNV(msm, ssm, wat, 0u, true);
#else
                    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> dw;
                    coopMatLoadNV(dw, sdw, wat, 0u, true);
#endif
#ifdef Q8_1_ACT
                    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> mw;
                    coopMatLoadNV(mw, smw, wat, 0u, true);
#endif
                    [[unroll]] for (uint j = 0u; j < Q_FT; j++) {
                        const uint c = (s * Q_FR + i) * Q_FT + j;
                        icoopmatNV<32, gl_ScopeSubgroup, 16, 16> mc = icoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0);
                        mc = coopMatMulAddNV(ma, mb[j], mc);
#ifdef Q6_HALVES
                        // mc: the first 16 values' sums; mc1: the last 16's.
                        icoopmatNV<32, gl_ScopeSubgroup, 16, 16> mc1 = icoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0);
                        mc1 = coopMatMulAddNV(ma, mb1[j], mc1);
#endif
                        // Element e of every matrix of this shape is the same
                        // (row, token) — the test against sdot4's bits checks it.
                        for (uint el = 0u; el < mc.length(); el++) {
                            const float is = float(mc[el]);
#if defined(STAGE_SUMS) && defined(KQ_MINS)
                            const uint sm = uint(msm[el]);
                            cisb[c][el] += int(sm & 0xffffu) * mc[el];
                            cmsb[c][el] += int(sm >> 16) * bs[j][el];
#elif defined(STAGE_SUMS)
                            const ivec2 sc = kq_pair_scales(uint(msm[el]));
                            cisb[c][el] += sc.x * mc[el] + sc.y * mc1[el];
#elif defined(KQ_MINS)
                            const uint f = uint(mf[el]), sm = uint(msm[el]);
                            precise float v = (f16_to_f32(f) * da[j][el]) * float(int(sm & 0xffffu) * mc[el]) -
                                              (f16_to_f32(f >> 16) * da[j][el]) * float(int(sm >> 16) * bs[j][el]);
                            cacc[c][el] += v;
#elif defined(Q6_HALVES)
                            const ivec2 sc = kq_pair_scales(uint(msm[el]));
                            precise float v = (f16_to_f32(uint(mf[el])) * da[j][el]) * float(sc.x * mc[el] + sc.y * mc1[el]);
                            cacc[c][el] += v;
#elif defined(W_Q8_0)
                            cacc[c][el] += is * (dw[el] * da[j][el]);
#elif defined(W_Q5_0)
                            cacc[c][el] += (dw[el] * da[j][el]) * is;
#elif defined(Q8_1_ACT)
                            precise float v = (dw[el] * da[j][el]) * is + mw[el] * sa1[j][el];
                            cacc[c][el] += v;
#else
                            cacc[c][el] += (is * dw[el]) * da[j][el];
#endif
                        }
                    }
                }
            }
#else
#if defined(Q8_K_ACT)
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                // Q6_K keeps an integer sum per 16-value group (isum[16·g + …]).
                int isum[16u * KGROUPS];
                for (uint i = 0u; i < 16u * KGROUPS; i++) {
                    isum[i] = 0;
                }
                [[unroll]] for (uint k = 0u; k < 8u; k++) {
                    const uint g = k / (8u / KGROUPS);
                    uint wv[4], av[4];
                    for (uint i = 0u; i < 4u; i++) {
                        wv[i] = sw[((s * SB + bb) * TR + tr + 16u * i) * WS + k];
                        av[i] = sa[(bb * TT + tt + 16u * i) * AW + k];
                    }
                    for (uint i = 0u; i < 4u; i++) {
                        for (uint j = 0u; j < 4u; j++) {
                            isum[16u * g + 4u * i + j] += sdot4(wv[i], av[j]);
                        }
                    }
                }
                for (uint i = 0u; i < 4u; i++) {
                    const uint wat = (s * SB + bb) * TR + tr + 16u * i;
                    const uint f = sf[wat], sm = ssm[wat];
                    const float dw = f16_to_f32(f);
#if defined(KQ_MINS)
                    const float dmin = f16_to_f32(f >> 16);
                    const int sc = int(sm & 0xffffu), mn = int(sm >> 16);
#elif defined(KQ_GROUP_MINS)
                    const float dmin = f16_to_f32(f >> 16);
                    const ivec2 sc = ivec2(sm & 15u, (sm >> 8) & 15u), mn = ivec2((sm >> 4) & 15u, sm >> 12);
#else
                    const ivec2 sc = kq_pair_scales(sm); // IQ4_XS: its one scale in x
#endif
                    for (uint j = 0u; j < 4u; j++) {
                        const uint at = bb * TT + tt + 16u * j;
#if defined(STAGE_SUMS) && defined(KQ_MINS)
                        isb[s * 16u + 4u * i + j] += sc * isum[4u * i + j];
                        msb[s * 16u + 4u * i + j] += mn * sbs[at];
#elif defined(STAGE_SUMS)
                        isb[s * 16u + 4u * i + j] += sc.x * isum[4u * i + j] + sc.y * isum[16u + 4u * i + j];
#else
                        const float dy = sda[at];
#if defined(KQ_MINS)
                        precise float v = (dw * dy) * float(sc * isum[4u * i + j]) - (dmin * dy) * float(mn * sbs[at]);
#elif defined(KQ_GROUP_MINS)
                        const int bs = sbs[at];
                        precise float v = (dw * dy) * float(sc.x * isum[4u * i + j] + sc.y * isum[16u + 4u * i + j]) -
                                          (dmin * dy) * float(mn.x * bitfieldExtract(bs, 0, 16) + mn.y * bitfieldExtract(bs, 16, 16));
#elif defined(W_Q6_K) || defined(W_Q3_K)
                        precise float v = (dw * dy) * float(sc.x * isum[4u * i + j] + sc.y * isum[16u + 4u * i + j]);
#else
                        precise float v = (dw * dy) * float(sc.x * isum[4u * i + j]);
#endif
                        acc[s * 16u + 4u * i + j] += v;
#endif
                    }
                }
            }
#else
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                int isum[16];
                for (uint i = 0u; i < 16u; i++) {
                    isum[i] = 0;
                }
                for (uint k = 0u; k < 8u; k++) {
                    uint wv[4], av[4]; // four signed bytes of a row, of a token
                    for (uint i = 0u; i < 4u; i++) {
                        wv[i] = sw[((s * SB + bb) * TR + tr + 16u * i) * WS + k];
                        av[i] = sa[(bb * TT + tt + 16u * i) * AW + k];
                    }
                    for (uint i = 0u; i < 4u; i++) {
                        for (uint j = 0u; j < 4u; j++) {
                            isum[4u * i + j] += sdot4(wv[i], av[j]);
                        }
                    }
                }
                for (uint i = 0u; i < 4u; i++) {
                    const uint wat = (s * SB + bb) * TR + tr + 16u * i;
                    const float dw = sdw[wat];
                    for (uint j = 0u; j < 4u; j++) {
                        const float da = sda[bb * TT + tt + 16u * j];
#if defined(W_Q8_0)
                        acc[s * 16u + 4u * i + j] += float(isum[4u * i + j]) * (dw * da);
#elif defined(W_Q5_0)
                        acc[s * 16u + 4u * i + j] += (dw * da) * float(isum[4u * i + j]);
#elif defined(Q8_1_ACT)
                        precise float v = (dw * da) * float(isum[4u * i + j]) + smw[wat] * ssa[bb * TT + tt + 16u * j];
                        acc[s * 16u + 4u * i + j] += v;
#else
                        acc[s * 16u + 4u * i + j] += (float(isum[4u * i + j]) * dw) * da;
#endif
                    }
                }
            }
#endif
#endif
        }
#if defined(STAGE_SUMS) && defined(COOP)
        // The stage's float terms, with the last chunk's factors (the
        // super-block's).
        {
            const uint bl = min(SB, nb - b0) - 1u;
            fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> da[Q_FT];
            [[unroll]] for (uint j = 0u; j < Q_FT; j++) {
                coopMatLoadNV(da[j], sda, bl * TT + stok + 16u * j, 0u, false);
            }
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                [[unroll]] for (uint i = 0u; i < Q_FR; i++) {
                    icoopmatNV<32, gl_ScopeSubgroup, 16, 16> mf; // binary16 d and dmin (uint bits)
                    coopMatLoadNV(mf, sf, (s * SB + bl) * TR + srow + 16u * i, 0u, true);
                    [[unroll]] for (uint j = 0u; j < Q_FT; j++) {
                        const uint c = (s * Q_FR + i) * Q_FT + j;
                        for (uint el = 0u; el < mf.length(); el++) {
                            const uint f = uint(mf[el]);
#ifdef KQ_MINS
                            precise float v = (f16_to_f32(f) * da[j][el]) * float(cisb[c][el]) -
                                              (f16_to_f32(f >> 16) * da[j][el]) * float(cmsb[c][el]);
#else
                            precise float v = (f16_to_f32(f) * da[j][el]) * float(cisb[c][el]);
#endif
                            cacc[c][el] += v;
                        }
                    }
                }
            }
        }
#elif defined(STAGE_SUMS)
        {
            const uint bl = min(SB, nb - b0) - 1u;
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                for (uint i = 0u; i < 4u; i++) {
                    const uint f = sf[(s * SB + bl) * TR + tr + 16u * i];
                    for (uint j = 0u; j < 4u; j++) {
                        const uint e = s * 16u + 4u * i + j;
                        const float dy = sda[bl * TT + tt + 16u * j];
#ifdef KQ_MINS
                        precise float v = (f16_to_f32(f) * dy) * float(isb[e]) - (f16_to_f32(f >> 16) * dy) * float(msb[e]);
#else
                        precise float v = (f16_to_f32(f) * dy) * float(isb[e]);
#endif
                        acc[e] += v;
                    }
                }
            }
        }
#endif
        barrier();
    }
#elif defined(COOP)
    // F16: stage FC columns of every row and token as binary16 pairs,
    // then each subgroup multiplies its 16 rows by its two 16-token slices,
    // 16 columns a product, accumulating in float32 on the tensor cores.
    // The next stage's global loads are issued into registers (pw, pa)
    // before this stage's products, so they are in flight while the
    // tensor cores work; the workgroup has few peers on its
    // multiprocessor (shared memory) to hide them otherwise.
    uvec4 pw[F16_WTASKS];
    uvec4 pa[F16_ATASKS];
    f16_fetch(0u, row0, tok0, tid, pw, pa);
    for (uint k0 = 0u; k0 < pc.ncols; k0 += FC) {
#ifdef KQ_F16
        kq16_store(k0, tid, pw);
#else
        [[unroll]] for (uint u = 0u; u < F16_WTASKS; u++) {
            const uint n = tid + F16_NT * u;
            if (n < NW * TR * (FC / 8u)) {
                const uint s = n / (TR * (FC / 8u)), r = (n / (FC / 8u)) % TR, c8 = n % (FC / 8u);
                for (uint c = 0u; c < 4u; c++) {
                    sw[(s * TR + r) * FS + 4u * c8 + c] = pw[u][c];
                }
            }
        }
#endif
        [[unroll]] for (uint u = 0u; u < F16_ATASKS; u++) {
            const uint n = tid + F16_NT * u;
            if (n < TT * (FC / 8u)) {
                for (uint c = 0u; c < 4u; c++) {
                    sa[(n / (FC / 8u)) * FS + 4u * (n % (FC / 8u)) + c] = pa[u][c];
                }
            }
        }
        barrier();
        if (k0 + FC < pc.ncols) {
            f16_fetch(k0 + FC, row0, tok0, tid, pw, pa);
        }
        for (uint kk = 0u; kk < FC / 16u; kk++) {
            // Each operand tile loaded from shared memory once: the
            // weights' NW·F16_FR, the tokens' F16_FT, then their products
            // (each sum still takes its 16-column steps in order).
#ifdef F16_SPLIT
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma[F16_FR];
            [[unroll]] for (uint i = 0u; i < F16_FR; i++) {
                coopMatLoadNV(ma[i], sw, (sws * TR + srow + 16u * i) * FS + 8u * kk, FS, false);
            }
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> mb[F16_FT]; // column-major: a token's columns
            [[unroll]] for (uint j = 0u; j < F16_FT; j++) {
                coopMatLoadNV(mb[j], sa, (stok + 16u * j) * FS + 8u * kk, FS, true);
            }
            [[unroll]] for (uint i = 0u; i < F16_FR; i++) {
                [[unroll]] for (uint j = 0u; j < F16_FT; j++) {
                    cacc[i * F16_FT + j] = coopMatMulAddNV(ma[i], mb[j], cacc[i * F16_FT + j]);
                }
            }
#else
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma[NW * F16_FR];
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                [[unroll]] for (uint i = 0u; i < F16_FR; i++) {
                    coopMatLoadNV(ma[s * F16_FR + i], sw, (s * TR + srow + 16u * i) * FS + 8u * kk, FS, false);
                }
            }
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> mb[F16_FT]; // column-major: a token's columns
            [[unroll]] for (uint j = 0u; j < F16_FT; j++) {
                coopMatLoadNV(mb[j], sa, (stok + 16u * j) * FS + 8u * kk, FS, true);
            }
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                [[unroll]] for (uint i = 0u; i < F16_FR; i++) {
                    [[unroll]] for (uint j = 0u; j < F16_FT; j++) {
                        const uint c = (s * F16_FR + i) * F16_FT + j;
                        cacc[c] = coopMatMulAddNV(ma[s * F16_FR + i], mb[j], cacc[c]);
                    }
                }
            }
#endif
        }
        barrier();
    }
#ifdef F16_SPLIT
    // Each 16-row × 32-token slice of the sums goes through shared memory
    // (free after the last stage's barrier): the gate's subgroup stores
    // its slice in sw, the up's (the same rows and tokens) in sa, each in
    // its part; after a barrier each of the pair emits 16 of the 32
    // tokens, invocation lane row lane % 16 and 8 tokens.
    const uint cbase = 16u * F16_CS * sgl;
    [[unroll]] for (uint i = 0u; i < F16_FR; i++) {
        [[unroll]] for (uint j = 0u; j < F16_FT; j += 2u) {
            [[unroll]] for (uint h = 0u; h < 2u; h++) {
                if (sws == 0u) {
                    coopMatStoreNV(cacc[i * F16_FT + j + h], sw, cbase + 16u * h, F16_CS, false);
                } else {
                    coopMatStoreNV(cacc[i * F16_FT + j + h], sa, cbase + 16u * h, F16_CS, false);
                }
            }
            barrier();
            const uint row = row0 + srow + 16u * i + lane % 16u;
            const uint t0 = 16u * sws + 8u * (lane / 16u);
            for (uint el = 0u; el < 8u; el++) {
                const uint tok = tok0 + stok + 16u * j + t0 + el, at = cbase + (lane % 16u) * F16_CS + t0 + el;
                if (row < pc.nrows && tok < pc.ntok) {
                    emit(row, tok, uintBitsToFloat(sw[at]), uintBitsToFloat(sa[at]));
                }
            }
            barrier();
        }
    }
#else
    // Each 16-row × 32-token slice of the subgroup's sums goes through its
    // part of sw (free after the last stage's barrier) to the epilogue's
    // (row, token) layout: invocation lane takes row lane % 16 and 16
    // tokens from 16·(lane / 16) (consecutive invocations write
    // consecutive rows of d).
    const uint cbase = 16u * F16_CS * sg;
    [[unroll]] for (uint i = 0u; i < F16_FR; i++) {
        [[unroll]] for (uint j = 0u; j < F16_FT; j += 2u) {
            float v[NW * 16u];
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                [[unroll]] for (uint h = 0u; h < 2u; h++) {
                    coopMatStoreNV(cacc[(s * F16_FR + i) * F16_FT + j + h], sw, cbase + 16u * h, F16_CS, false);
                }
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                for (uint el = 0u; el < 16u; el++) {
                    v[16u * s + el] = uintBitsToFloat(sw[cbase + (lane % 16u) * F16_CS + 16u * (lane / 16u) + el]);
                }
                subgroupBarrier();
            }
            const uint row = row0 + srow + 16u * i + lane % 16u;
            for (uint el = 0u; el < 16u; el++) {
                const uint tok = tok0 + stok + 16u * j + 16u * (lane / 16u) + el;
                if (row < pc.nrows && tok < pc.ntok) {
                    emit(row, tok, v[el], v[16u * (NW - 1u) + el]);
                }
            }
        }
    }
#endif
#else
    for (uint k0 = 0u; k0 < pc.ncols; k0 += 32u) {
        // Stage 32 columns: NW·64 rows and 64 tokens, 8 (16) values each.
        for (uint n = tid; n < NW * TR * 32u; n += WG) {
            const uint s = n / (TR * 32u), r = (n / 32u) % TR, c = n % 32u;
            const uint row = row0 + r, k = k0 + c;
            float v = 0.0;
            if (row < pc.nrows && k < pc.ncols) {
                const uint i = row * pc.ncols + k;
#if defined(W_F32)
                v = uintBitsToFloat(wword(s, i));
#elif defined(W_F16)
                v = f16_to_f32(wu16(s, 2u * i));
#elif defined(W_BF16)
                v = uintBitsToFloat(wu16(s, 2u * i) << 16);
#else
#error "define a weight type"
#endif
            }
            sw[(s * TR + r) * 33u + c] = v;
        }
        for (uint n = tid; n < TT * 32u; n += WG) {
            const uint t = n / 32u, c = n % 32u, tok = tok0 + t, k = k0 + c;
            sa[t * 33u + c] = tok < pc.ntok && k < pc.ncols ? x[pc.xoff + tok * pc.ncols + k] : 0.0;
        }
        barrier();
        const uint kn = min(32u, pc.ncols - k0);
        // Columns outer, weights inner: with the weights' loop outer,
        // NVIDIA's F16 gate·up (NW 2) ran 10× slower than one weight
        // (14.5 against 1.5 ms at 5632×2048, 512 tokens). Each sum still
        // takes its columns in order: the same bits.
        for (uint c = 0u; c < kn; c++) {
            float av[4];
            for (uint i = 0u; i < 4u; i++) {
                av[i] = sa[(tt + 16u * i) * 33u + c];
            }
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                float wv[4];
                for (uint i = 0u; i < 4u; i++) {
                    wv[i] = sw[(s * TR + tr + 16u * i) * 33u + c];
                }
                for (uint i = 0u; i < 4u; i++) {
                    for (uint j = 0u; j < 4u; j++) {
                        acc[s * 16u + 4u * i + j] += wv[i] * av[j];
                    }
                }
            }
        }
        barrier();
    }
#endif
#if defined(COOP) && defined(QUANT_ACT)
    // Each 16-row × 32-token slice of the subgroup's sums goes through its
    // part of sw (free after the last stage's barrier) to the epilogue's
    // (row, token) layout: invocation lane takes row lane % 16 and 16
    // tokens from 16·(lane / 16) (consecutive invocations write
    // consecutive rows of d).
    const uint cbase = 16u * CS * sg;
#ifdef BW
    // Then, per 32 tokens, the SwiGLU values go back through the same part
    // of sw token-major: invocation lane gathers token lane's 16 rows of
    // each fragment row, 32 in all, its block, and quantizes it.
    [[unroll]] for (uint j = 0u; j < Q_FT; j += 2u) {
        float blk[32];
        [[unroll]] for (uint i = 0u; i < Q_FR; i++) {
            float v[NW * 16u];
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                [[unroll]] for (uint h = 0u; h < 2u; h++) {
                    coopMatStoreNV(cacc[(s * Q_FR + i) * Q_FT + j + h], sw, cbase + 16u * h, CS, false);
                }
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                for (uint el = 0u; el < 16u; el++) {
                    v[16u * s + el] = uintBitsToFloat(sw[cbase + (lane % 16u) * CS + 16u * (lane / 16u) + el]);
                }
                subgroupBarrier();
            }
            const uint row = row0 + srow + 16u * i + lane % 16u;
            for (uint el = 0u; el < 16u; el++) {
                const uint tok = tok0 + stok + 16u * j + 16u * (lane / 16u) + el;
                const float y = SWIGLU(v[el], v[16u + el]);
                if (row < pc.nrows && tok < pc.ntok) {
                    d[pc.doff + tok * pc.dstride + row] = y;
                }
                sw[cbase + (lane % 16u) * CS + 16u * (lane / 16u) + el] = floatBitsToUint(y);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint r = 0u; r < 16u; r++) {
                blk[16u * i + r] = uintBitsToFloat(sw[cbase + r * CS + lane]);
            }
            subgroupBarrier();
        }
        const uint tok = tok0 + stok + 16u * j + lane, b = (row0 + srow) / 32u;
        if (row0 + srow < pc.nrows && tok < pc.ntok) {
            store_q8_block(pc.qoff + (tok * (pc.nrows / 32u) + b) * BW, blk);
        }
    }
#else
    [[unroll]] for (uint i = 0u; i < Q_FR; i++) {
        [[unroll]] for (uint j = 0u; j < Q_FT; j += 2u) {
            float v[NW * 16u];
            [[unroll]] for (uint s = 0u; s < NW; s++) {
                [[unroll]] for (uint h = 0u; h < 2u; h++) {
                    coopMatStoreNV(cacc[(s * Q_FR + i) * Q_FT + j + h], sw, cbase + 16u * h, CS, false);
                }
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                for (uint el = 0u; el < 16u; el++) {
                    v[16u * s + el] = uintBitsToFloat(sw[cbase + (lane % 16u) * CS + 16u * (lane / 16u) + el]);
                }
                subgroupBarrier();
            }
            const uint row = row0 + srow + 16u * i + lane % 16u;
            for (uint el = 0u; el < 16u; el++) {
                const uint tok = tok0 + stok + 16u * j + 16u * (lane / 16u) + el;
                if (row < pc.nrows && tok < pc.ntok) {
                    emit(row, tok, v[el], v[16u * (NW - 1u) + el]);
                }
            }
        }
    }
#endif
#endif
#if !defined(COOP) && defined(BW)
    // OUT_Q8_0, OUT_Q8_1 without tensor cores: the SwiGLU values go
    // through sw (free after the last stage's barrier) token-major, 64
    // rows a token, and 128 invocations each quantize one token's block
    // (row0 is a multiple of 64: two blocks a token).
    for (uint el = 0u; el < 16u; el++) {
        const uint r = tr + 16u * (el / 4u), t = tt + 16u * (el % 4u);
        const float y = SWIGLU(acc[el], acc[16u + el]);
        if (row0 + r < pc.nrows && tok0 + t < pc.ntok) {
            d[pc.doff + (tok0 + t) * pc.dstride + row0 + r] = y;
        }
        sw[t * TR + r] = floatBitsToUint(y);
    }
    barrier();
    if (tid < 2u * TT) {
        const uint t = tid / 2u, b = tid % 2u;
        float blk[32];
        for (uint k = 0u; k < 32u; k++) {
            blk[k] = uintBitsToFloat(sw[t * TR + 32u * b + k]);
        }
        if (row0 + 32u * b < pc.nrows && tok0 + t < pc.ntok) {
            store_q8_block(pc.qoff + ((tok0 + t) * (pc.nrows / 32u) + row0 / 32u + b) * BW, blk);
        }
    }
#elif !defined(COOP)
    for (uint el = 0u; el < 16u; el++) {
        const uint row = row0 + tr + 16u * (el / 4u), tok = tok0 + tt + 16u * (el % 4u);
        if (row >= pc.nrows || tok >= pc.ntok) {
            continue;
        }
        emit(row, tok, acc[el], acc[(NW - 1u) * 16u + el]);
    }
#endif
}
