// Causal grouped-query attention for prefills over a binary16 (F16) KV
// cache on NVIDIA's cooperative matrix 2 (VK_NV_cooperative_matrix2):
// attention_coop.comp's bindings, push constants, masks and two passes,
// with each tile's products, masks and row reductions as workgroup-scope
// matrices whose loads the driver stages (tensor addressing straight from
// the query, cache and output buffers).
//
// One workgroup per (query head, tile of AT_TQ tokens); gl_WorkGroupID.y
// counts the tiles from the last, which see the most cache rows and,
// dispatched first, do not trail the others. It walks the cache rows its
// tokens see in tiles of AT_TK rows, twice:
//   pass one: S = Q·Kᵀ (masked, soft-capped and scaled), each token's
//     largest score M and sum of exponentials L (kept per column of the
//     tiles, rescaled tile by tile to the column's running largest, and
//     reduced over the row at the end);
//   pass two: the same S again (the same products: the same bits), the
//     probabilities P = exp(S − M)·(1/L) rounded to binary16, O += P·V.
// Heads of up to AT_D values (64 or 128, a multiple of 16: the matrices'
// columns past the head are the clamped loads' zeros). The shapes
// (shadergen's cm2AttnShapes; 32 tokens × 32 rows kept) were chosen by
// the model's profile on an H200 (docs/decisions.md, "Prefill attention
// on cooperative matrix 2").
//
// Numerics: attention_coop.comp's formula — queries and probabilities
// rounded to binary16 (round to nearest even: the RoundingModeRTE
// execution mode below), binary16 products summed in float32 by the
// tensor cores in their order — but the sums of exponentials are reduced
// in the driver's order, not attention_coop's quarters: the f16 cache's
// tolerance in TestAttention, the end-to-end rule in the models.
//
// Masked scores are NEG, a finite stand-in for −∞: a column's masked
// scores before its first visible one add exp(NEG − NEG) = 1 to its
// running sum, which the first visible score's rescaling (exp(NEG − m) =
// 0) wipes out, as the final rescaling to the row's largest does for
// columns that never saw one; with −∞ they would be NaN (−∞ − −∞). Only
// the tile's padding tokens (past the batch) keep M = NEG, and their
// outputs are never stored.
//
// A cache row no token of the workgroup sees may never have been written
// (another sequence's gap; NaN in the tests), and a zero probability times
// NaN is NaN in a matrix product: rows past the last seen one are the
// clamped load's zeros, and where the seen rows have gaps (a batch of
// several sequences) each tile's V rows no token sees are replaced by
// zeros element by element. K rows need no such care: their scores are
// masked to NEG by a select.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_spirv_intrinsics : require

#if !defined(COOP2) || !defined(KV_F16) || !defined(AT_TQ) || !defined(AT_TK) || !defined(AT_D)
#error attention_cm2.comp reads a binary16 cache (COOP2, KV_F16, AT_TQ, AT_TK, AT_D)
#endif

// RoundingModeRTE (capability 4467, execution mode 4462) for 16-bit
// floats: the float32 → binary16 conversions of the queries and the
// probabilities round to nearest even, as f32_to_f16 does.
spirv_execution_mode(capabilities = [4467], 4462, 16);

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;

#include "attention.glsl"

// The cache as binary16 values, for the tensor loads (attention.glsl
// declares the same bindings as words).
layout(binding = 2) readonly buffer KC16 { float16_t k16[]; };
layout(binding = 3) readonly buffer VC16 { float16_t v16[]; };

#define TQ AT_TQ
#define TK AT_TK
#define D AT_D
#define NEG (-3.0e38)

#define ACC_S coopmat<float, gl_ScopeWorkgroup, TQ, TK, gl_MatrixUseAccumulator>
#define ACC_O coopmat<float, gl_ScopeWorkgroup, TQ, D, gl_MatrixUseAccumulator>
#define MAT_Q coopmat<float16_t, gl_ScopeWorkgroup, TQ, D, gl_MatrixUseA>
#define MAT_KT coopmat<float16_t, gl_ScopeWorkgroup, D, TK, gl_MatrixUseB>
#define MAT_P coopmat<float16_t, gl_ScopeWorkgroup, TQ, TK, gl_MatrixUseA>
#define MAT_V coopmat<float16_t, gl_ScopeWorkgroup, TK, D, gl_MatrixUseB>
#define CLAMPED gl_CooperativeMatrixClampModeConstantNV

shared uint lo_row[TQ], hi_row[TQ]; // rows each token sees (lo > hi: none)
shared uint vis[TK];                // with gaps: whether a token sees row r0 + i

// The element functions of the tiles (row: a token of the tile; col: a
// cache row, from r0, or a dimension), and the row reductions' combiners
// (sum_of, largest: two values, no position).
float masked(const in uint r, const in uint c, const in float s, const in uint r0) {
    const uint row = r0 + c;
    return lo_row[r] <= row && row <= hi_row[r] ? capped(s) * pc.scale : NEG;
}
float max_of(const in uint r, const in uint c, const in float a, const in float b) {
    return max(a, b);
}
float sum_of(const in float a, const in float b) {
    return a + b;
}
float largest(const in float a, const in float b) {
    return max(a, b);
}
float exp_from(const in uint r, const in uint c, const in float s, const in float m) {
    return exp(s - m);
}
float reciprocal(const in uint r, const in uint c, const in float l) {
    return div_rn(1.0, l);
}
float probability(const in uint r, const in uint c, const in float s, const in float m, const in float inv) {
    return exp(s - m) * inv;
}
float16_t seen_rows(const in uint r, const in uint c, const in float16_t v) {
    return vis[r] != 0u ? v : float16_t(0.0);
}

// needed says whether a token of the tile sees a row of r0 .. r0+TK-1
// (only asked where the rows seen have gaps).
bool needed(const uint r0, const uint ntile) {
    for (uint i = 0u; i < ntile; i++) {
        if (lo_row[i] <= hi_row[i] && lo_row[i] < r0 + TK && hi_row[i] >= r0) {
            return true;
        }
    }
    return false;
}

// sees says whether a token of the tile sees cache row r.
bool sees(const uint r, const uint ntile) {
    for (uint i = 0u; i < ntile; i++) {
        if (lo_row[i] <= r && r <= hi_row[i]) {
            return true;
        }
    }
    return false;
}

void main() {
    const uint h = gl_WorkGroupID.x;
    const uint t0 = (gl_NumWorkGroups.y - 1u - gl_WorkGroupID.y) * TQ;
    const uint tid = gl_LocalInvocationID.x;
    const uint hd = pc.hd;
    const uint kvh = h / (pc.heads / pc.kvheads);
    const uint ntile = min(TQ, pc.ntok - t0);

    for (uint i = tid; i < TQ; i += WG) {
        uint lo = 1u, hi = 0u; // none
        if (i < ntile) {
            const uint t = t0 + i;
            const uint visible = step[pc.posoff + t] + 1u;
            const uint first = pc.window != 0u && visible > pc.window ? visible - pc.window : 0u;
            const uint cell = step[pc.celloff + t];
            lo = cell + first;
            hi = cell + visible - 1u;
        }
        lo_row[i] = lo;
        hi_row[i] = hi;
    }
    barrier();
    // The rows the tile's tokens see: from rlo to rhi, every token from
    // maxlo to minhi; gapless: their union is one interval (each token's
    // first row is rlo or follows a row some token sees).
    uint rlo = 0xffffffffu, rhi = 0u, maxlo = 0u, minhi = 0xffffffffu;
    bool gapless = true;
    for (uint i = 0u; i < ntile; i++) {
        const uint lo = lo_row[i], hi = hi_row[i];
        rlo = min(rlo, lo);
        rhi = max(rhi, hi);
        maxlo = max(maxlo, lo);
        minhi = min(minhi, hi);
    }
    for (uint i = 0u; i < ntile; i++) {
        const uint lo = lo_row[i];
        bool joined = lo == rlo;
        for (uint j = 0u; j < ntile && !joined; j++) {
            joined = lo_row[j] < lo && hi_row[j] + 1u >= lo;
        }
        gapless = gapless && joined;
    }

    // The queries (float32, rounded to binary16 as the A matrix).
    MAT_Q qm;
    {
        tensorLayoutNV<2, CLAMPED> lq = createTensorLayoutNV(2, CLAMPED);
        lq = setTensorLayoutDimensionNV(lq, pc.ntok, hd);
        lq = setTensorLayoutStrideNV(lq, pc.heads * hd, 1u);
        coopmat<float, gl_ScopeWorkgroup, TQ, D, gl_MatrixUseAccumulator> qf;
        coopMatLoadTensorNV(qf, q, pc.qoff + h * hd, sliceTensorLayoutNV(lq, t0, TQ, 0u, D));
        qm = MAT_Q(qf);
    }
    // The cache's K and V rows of head kvh: clamped layouts for tiles past
    // rhi (zeros there) or heads narrower than D; unclamped ones, with the
    // strides and offset masked to multiples of 8 (16-byte loads), where
    // a tile is wholly inside.
    const uint kvstride = pc.kvheads * hd, kvoff = kvh * hd;
    tensorLayoutNV<2, CLAMPED> lc = createTensorLayoutNV(2, CLAMPED);
    lc = setTensorLayoutDimensionNV(lc, rhi + 1u, hd);
    lc = setTensorLayoutStrideNV(lc, kvstride, 1u);
    tensorLayoutNV<2> lu = createTensorLayoutNV(2);
    lu = setTensorLayoutDimensionNV(lu, rhi + 1u, D);
    lu = setTensorLayoutStrideNV(lu, kvstride & ~7u, 1u);
    const uint kvoff8 = kvoff & ~7u;
    const bool aligned = hd == D && kvstride % 8u == 0u;
    tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);

// SCORES(r0): S for the tile at r0, masked (or only scaled, where every
// token sees every row of it and there is no soft cap).
#define SCORES(r0)                                                                                         \
    ACC_S s = ACC_S(0.0);                                                                                  \
    {                                                                                                      \
        MAT_KT kt;                                                                                         \
        if (aligned && (r0) + TK <= rhi + 1u) {                                                            \
            coopMatLoadTensorNV(kt, k16, kvoff8, sliceTensorLayoutNV(lu, r0, TK, 0u, D), transposed);      \
        } else {                                                                                           \
            coopMatLoadTensorNV(kt, k16, kvoff, sliceTensorLayoutNV(lc, r0, TK, 0u, D), transposed);       \
        }                                                                                                  \
        s = coopMatMulAdd(qm, kt, s);                                                                      \
        if (maxlo <= (r0) && (r0) + TK - 1u <= minhi && pc.softcap == 0.0) {                               \
            s = s * pc.scale;                                                                              \
        } else {                                                                                           \
            coopMatPerElementNV(s, s, masked, r0);                                                         \
        }                                                                                                  \
    }

    // Pass 1: each token's largest score and sum of exponentials, kept
    // per column of the tiles (the largest score a column has seen and
    // its sum of exponentials, rescaled to it) so that no step waits on a
    // row reduction across the workgroup; the rows are reduced once, at
    // the end: the largest of the columns', and their sums rescaled to it.
    ACC_S colmax = ACC_S(NEG), colsum = ACC_S(0.0);
    for (uint r0 = rlo; r0 <= rhi; r0 += TK) {
        if (!gapless && !needed(r0, ntile)) {
            continue;
        }
        SCORES(r0)
        ACC_S mn, e, rescale;
        coopMatPerElementNV(mn, s, max_of, colmax);
        coopMatPerElementNV(rescale, colmax, exp_from, mn);
        coopMatPerElementNV(e, s, exp_from, mn);
        colsum = colsum * rescale + e;
        colmax = mn;
    }
    ACC_S m, l, inv;
    coopMatReduceNV(m, colmax, gl_CooperativeMatrixReduceRowNV, largest);
    {
        ACC_S rescale;
        coopMatPerElementNV(rescale, colmax, exp_from, m);
        colsum = colsum * rescale;
    }
    coopMatReduceNV(l, colsum, gl_CooperativeMatrixReduceRowNV, sum_of);
    coopMatPerElementNV(inv, l, reciprocal);

    // Pass 2: the probabilities, and O += P·V.
    ACC_O om = ACC_O(0.0);
    for (uint r0 = rlo; r0 <= rhi; r0 += TK) {
        if (!gapless && !needed(r0, ntile)) {
            continue;
        }
        SCORES(r0)
        ACC_S p;
        coopMatPerElementNV(p, s, probability, m, inv);
        MAT_P pm = MAT_P(p);
        MAT_V vm;
        if (aligned && r0 + TK <= rhi + 1u) {
            coopMatLoadTensorNV(vm, v16, kvoff8, sliceTensorLayoutNV(lu, r0, TK, 0u, D));
        } else {
            coopMatLoadTensorNV(vm, v16, kvoff, sliceTensorLayoutNV(lc, r0, TK, 0u, D));
        }
        if (!gapless) {
            barrier(); // vis of the last tile is read
            for (uint i = tid; i < TK; i += WG) {
                vis[i] = sees(r0 + i, ntile) ? 1u : 0u;
            }
            barrier();
            coopMatPerElementNV(vm, vm, seen_rows);
        }
        om = coopMatMulAdd(pm, vm, om);
    }

    // The output: [token][head][dimension] from ooff, clipped to the batch
    // and the head.
    tensorLayoutNV<2, CLAMPED> lout = createTensorLayoutNV(2, CLAMPED);
    lout = setTensorLayoutDimensionNV(lout, pc.ntok, hd);
    lout = setTensorLayoutStrideNV(lout, pc.heads * hd, 1u);
    coopMatStoreTensorNV(om, o, pc.ooff + h * hd, sliceTensorLayoutNV(lout, t0, TQ, 0u, D));
#ifdef BW
    // And each token's blocks of the output projection's activations,
    // from the values just written (o is coherent). Read back rather than
    // staged in shared memory: a copy there (17 KiB for 64 tokens) took
    // TinyLlama's attention 1 687 → 1 926 µs a Q8_0 prefill step.
    memoryBarrierBuffer();
    barrier();
    for (uint i = tid; i < TQ * (D / 32u); i += WG) {
        const uint tok = i / (D / 32u), b = i % (D / 32u);
        if (tok < ntile && 32u * b < hd) {
            float v[32];
            for (uint j = 0u; j < 32u; j++) {
                v[j] = o[pc.ooff + ((t0 + tok) * pc.heads + h) * hd + (32u * b + j)];
            }
            store_q8_block(pc.aoff + (((t0 + tok) * pc.heads + h) * hd / 32u + b) * BW, v);
        }
    }
#endif
}
