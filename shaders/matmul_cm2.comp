// Tiled matrix × matrix for batches (prefill) on NVIDIA's cooperative
// matrix 2 (VK_NV_cooperative_matrix2): F16 weights by binary16-paired
// activations (round_f16x2, rms_norm_mul_f16x2), the push constants,
// bindings and epilogues (SwiGLU, the residual add) of matmul_tiled.comp's
// tensor-core variants. Biased matmuls (BIAS) keep the NV (1) tiles, as
// before: no GPU test has run a bias epilogue here.
//
// A workgroup computes CM_TR weight rows × CM_TT tokens as one
// workgroup-scope accumulator matrix: each CM_TK-column step loads the
// weights' CM_TR × CM_TK slice and the activations' CM_TK × CM_TT slice
// straight from their buffers (tensor addressing: the driver stages them
// and lays out the fragments, which matmul_tiled.comp does by hand in
// shared memory) and multiplies them on the tensor cores. Sums are
// float32, in the tensor cores' order: the numerics of matmul_tiled's
// F16 tensor-core tiles (TestMatMul's summation-order bound), not its
// bits. Loads past the matrices' edges read zeros (clamped layouts);
// tiles wholly inside take unclamped ones (cheaper addressing).
//
// Workgroup x (then y) is the row tile, z the token tile; the host
// dispatches a workgroup per CM_TR rows and per CM_TT tokens.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require

#if !defined(COOP2) || !defined(W_F16) || !defined(CM_TR) || !defined(CM_TT) || !defined(CM_TK)
#error matmul_cm2.comp is for F16 weights (COOP2, W_F16, CM_TR, CM_TT, CM_TK)
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(push_constant) uniform Push {
    uint ncols, nrows, ntok;
    uint xoff;    // word offset of the activations' pairs
    uint doff;    // d: element offset
    uint eoff;    // ADD: element offset of e
    uint dstride; // elements between tokens in d (and e)
} pc;

layout(binding = 0) readonly buffer Wt { float16_t w[]; };
layout(binding = 1) readonly buffer X { float16_t x[]; }; // ceil(ncols / 2) pairs a token
layout(binding = 2) buffer D { float d[]; };
#if defined(ADD)
layout(binding = 3) readonly buffer E { float e[]; };
#elif defined(GATEUP)
layout(binding = 3) readonly buffer Ut { float16_t u[]; };
#endif

#define ACC coopmat<float, gl_ScopeWorkgroup, CM_TR, CM_TT, gl_MatrixUseAccumulator>
#define MAT_A coopmat<float16_t, gl_ScopeWorkgroup, CM_TR, CM_TK, gl_MatrixUseA>
#define MAT_B coopmat<float16_t, gl_ScopeWorkgroup, CM_TK, CM_TT, gl_MatrixUseB>

float silu(const in uint r, const in uint c, const in float v) {
    return v / (1.0 + exp(-v));
}

#ifdef ADD
// the residual's element (row0 + r, tok0 + c), where the tile has one
float add_residual(const in uint r, const in uint c, const in float v, const in uint row0, const in uint tok0) {
    const uint row = row0 + r, tok = tok0 + c;
    return row < pc.nrows && tok < pc.ntok ? v + e[pc.eoff + tok * pc.dstride + row] : v;
}
#endif

// The column steps from k0 = 0 with layouts LW (weights) and LX
// (activations, from element XOFF) into acc (and accu, the up weight's
// sums).
#ifdef GATEUP
#define STEPS(LW, LX, XOFF) \
    for (uint k0 = 0u; k0 < pc.ncols; k0 += CM_TK) { \
        MAT_A a; \
        MAT_B b; \
        coopMatLoadTensorNV(b, x, XOFF, sliceTensorLayoutNV(LX, tok0, CM_TT, k0, CM_TK), transposed); \
        coopMatLoadTensorNV(a, w, 0u, sliceTensorLayoutNV(LW, row0, CM_TR, k0, CM_TK)); \
        acc = coopMatMulAdd(a, b, acc); \
        coopMatLoadTensorNV(a, u, 0u, sliceTensorLayoutNV(LW, row0, CM_TR, k0, CM_TK)); \
        accu = coopMatMulAdd(a, b, accu); \
    }
#else
#define STEPS(LW, LX, XOFF) \
    for (uint k0 = 0u; k0 < pc.ncols; k0 += CM_TK) { \
        MAT_A a; \
        MAT_B b; \
        coopMatLoadTensorNV(a, w, 0u, sliceTensorLayoutNV(LW, row0, CM_TR, k0, CM_TK)); \
        coopMatLoadTensorNV(b, x, XOFF, sliceTensorLayoutNV(LX, tok0, CM_TT, k0, CM_TK), transposed); \
        acc = coopMatMulAdd(a, b, acc); \
    }
#endif

void main() {
    const uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint row0 = tile * CM_TR, tok0 = gl_WorkGroupID.z * CM_TT;
    if (row0 >= pc.nrows || tok0 >= pc.ntok) {
        return; // the whole workgroup
    }
    const uint xstride = 2u * ((pc.ncols + 1u) / 2u);
    // The activations are [token][column]: the B matrix (columns × tokens)
    // is their transpose.
    tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
    ACC acc = ACC(0.0);
#ifdef GATEUP
    ACC accu = ACC(0.0);
#endif
    if (row0 + CM_TR <= pc.nrows && tok0 + CM_TT <= pc.ntok && pc.ncols % CM_TK == 0u && pc.xoff % 4u == 0u) {
        // The whole tile inside both matrices, rows on 16-byte boundaries:
        // strides and offsets masked to multiples of 8 values (the same
        // values here) tell the compiler so, and it loads 16 bytes at a
        // time. Without the masks the H200 ran these tiles at a third of
        // the NV (1) tiles' speed.
        const uint ncols8 = pc.ncols & ~7u;
        tensorLayoutNV<2> lw = createTensorLayoutNV(2);
        lw = setTensorLayoutDimensionNV(lw, pc.nrows, ncols8);
        lw = setTensorLayoutStrideNV(lw, ncols8, 1u);
        tensorLayoutNV<2> lx = createTensorLayoutNV(2);
        lx = setTensorLayoutDimensionNV(lx, pc.ntok, ncols8);
        lx = setTensorLayoutStrideNV(lx, xstride & ~7u, 1u);
        const uint xoff8 = (2u * pc.xoff) & ~7u;
        STEPS(lw, lx, xoff8)
    } else {
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lw = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        lw = setTensorLayoutDimensionNV(lw, pc.nrows, pc.ncols);
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lx = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        lx = setTensorLayoutDimensionNV(lx, pc.ntok, pc.ncols);
        lx = setTensorLayoutStrideNV(lx, xstride, 1u);
        STEPS(lw, lx, 2u * pc.xoff)
    }
    // The epilogue, element by element as matmul_tiled's emit.
#ifdef GATEUP
    coopMatPerElementNV(acc, acc, silu);
    acc = acc * accu;
#elif defined(ADD)
    coopMatPerElementNV(acc, acc, add_residual, row0, tok0);
#endif
    // d is [token][row]: the accumulator (rows × tokens) is stored
    // transposed, clipped to the matrix.
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> ld = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    ld = setTensorLayoutDimensionNV(ld, pc.ntok, pc.nrows);
    ld = setTensorLayoutStrideNV(ld, pc.dstride, 1u);
    coopMatStoreTensorNV(acc, d, pc.doff, sliceTensorLayoutNV(ld, tok0, CM_TT, row0, CM_TR), transposed);
}
