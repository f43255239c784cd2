// Matrix × matrix for any token count (ops/ref MatMul and the fused
// matmuls): d[t·dstride + r] = W[r,:]·x[t,:] for weight rows r < nrows
// of ncols values and tokens t < ntok. One workgroup computes one weight
// Each invocation computes one weight row for up to NT tokens
// (gl_WorkGroupID.z is the token block), so a weight row is read once per
// NT tokens, with no barriers: workgroup x·WG + i takes row x·WG + i, and
// rows beyond the x dispatch limit continue in y.
//
// Variants by weight type (W_F32, W_F16, W_BF16, W_Q8_0, W_Q4_0, W_Q5_0,
// W_Q4_1, W_Q5_1) and epilogue:
//   (none)  d = W·x
//   ADD     d = W·x + e                  (MatMulAdd; d may alias e)
//   BIAS    d = W·x + e[row]             (MatMulBias: one bias row for every token)
//   GATEUP  d = silu(W·x) · (U·x)        (MatMulGateUpSwiGLU; U at binding 3)
//   GEGLU   d = gelu(W·x) · (U·x)        (MatMulGateUpGeGLU, GELU of gelu.glsl)
//
// Numerics follow the CPU backend (llama.cpp): F32 weights take float32
// activations; F16 weights take activations rounded to binary16 beforehand
// (quantize_q8's ROUND_F16 variant, into the scratch); Q8_0, Q4_0 and
// Q5_0 weights take activations quantized to Q8_0 blocks beforehand by
// quantize_q8 (binding 1 is then that scratch: per block one word holding
// the float value of its binary16 scale, then 8 words of int8), with an
// integer sum per block and ggml's float operand order per block. BF16
// weights take activations rounded to bfloat16 (ROUND_BF16); Q4_1 and
// Q5_1 take Q8_1 blocks (quantize_q8_1: 10 words, the float values of the
// binary16 d and s = d·Σq, then 8 words of int8) and add ggml's m·s term
// per block. Only the order of the float sums differs from the CPU.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#define NT 8u

layout(push_constant) uniform Push {
    uint ncols, nrows, ntok;
    uint xoff;    // x: element offset (float types) or word offset (Q8_0 scratch)
    uint doff;    // d: element offset
    uint eoff;    // ADD: element offset of e
    uint dstride; // elements between tokens in d (and e)
} pc;

layout(binding = 0) readonly buffer Wt { uint w[]; };
#if defined(W_Q8_0) || defined(W_Q4_0) || defined(W_Q5_0)
#define QUANT_ACT
#define ABW 9u // words per activation block (quantize_q8_0)
#elif defined(W_Q4_1) || defined(W_Q5_1)
#define QUANT_ACT
#define Q8_1_ACT
#define ABW 10u // words per activation block (quantize_q8_1: d, s, 8 words)
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

#include "half.glsl"
#ifdef GEGLU
#include "gelu.glsl"
#endif

// word i of weight s (0: W, 1: U).
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

void main() {
    const uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
    if (row >= pc.nrows) {
        return;
    }
    const uint t0 = gl_WorkGroupID.z * NT;
    const uint nt = min(NT, pc.ntok - t0);
    float acc[NT * NW];
    for (uint i = 0u; i < NT * NW; i++) {
        acc[i] = 0.0;
    }
#if defined(QUANT_ACT)
    const uint nb = pc.ncols / 32u;
    for (uint b = 0u; b < nb; b++) {
        for (uint s = 0u; s < NW; s++) {
#if defined(W_Q8_0)
            const uint wb = (row * nb + b) * 34u;
            const float dw = f16_to_f32(wu16(s, wb));
            uint wq[8];
            for (uint k = 0u; k < 8u; k++) {
                wq[k] = wu32(s, wb + 2u + 4u * k);
            }
#elif defined(W_Q5_0)
            const uint wb = (row * nb + b) * 22u;
            const float dw = f16_to_f32(wu16(s, wb));
            const uint qh = wu32(s, wb + 2u);
            uint wq[4];
            for (uint k = 0u; k < 4u; k++) {
                wq[k] = wu32(s, wb + 6u + 4u * k);
            }
#elif defined(W_Q4_1) || defined(W_Q5_1)
#if defined(W_Q4_1)
            const uint wb = (row * nb + b) * 20u;
            const uint qs = wb + 4u;
#else
            const uint wb = (row * nb + b) * 24u;
            const uint qh = wu32(s, wb + 4u);
            const uint qs = wb + 8u;
#endif
            const uint dm = wu32(s, wb);
            const float dw = f16_to_f32(dm & 0xffffu), mw = f16_to_f32(dm >> 16);
            uint wq[4];
            for (uint k = 0u; k < 4u; k++) {
                wq[k] = wu32(s, qs + 4u * k);
            }
#else
            const uint wb = (row * nb + b) * 18u;
            const float dw = f16_to_f32(wu16(s, wb));
            uint wq[4];
            for (uint k = 0u; k < 4u; k++) {
                wq[k] = wu32(s, wb + 2u + 4u * k);
            }
#endif
            for (uint j = 0u; j < nt; j++) {
                const uint ab = pc.xoff + ((t0 + j) * nb + b) * ABW;
                const float da = uintBitsToFloat(xq[ab]);
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
#else
    for (uint k = 0u; k < pc.ncols; k++) {
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
    for (uint j = 0u; j < nt; j++) {
        const uint o = (t0 + j) * pc.dstride + row;
        const float v = acc[j];
#if defined(ADD)
        d[pc.doff + o] = v + e[pc.eoff + o];
#elif defined(BIAS)
        d[pc.doff + o] = v + e[pc.eoff + row];
#elif defined(GATEUP)
        const float g = v;
        d[pc.doff + o] = (g / (1.0 + exp(-g))) * acc[NT + j];
#elif defined(GEGLU)
        d[pc.doff + o] = gelu_f16table(v) * acc[NT + j];
#else
        d[pc.doff + o] = v;
#endif
    }
}
