// Tiled matrix × matrix for batches (prefill): the products, epilogues,
// push constants, bindings and numerics of matmul.comp, computed in tiles.
// A workgroup of 256 invocations computes 64 weight rows × 64 tokens; the
// weights and activations of one 32-value block (quantized types) or 32
// columns (float types) at a time are staged in shared memory, each read
// from memory once per tile instead of once per row (activations) or per
// 8 tokens (weights), and each invocation computes 4 rows × 4 tokens from
// them, four int8 products at a time (sdot.glsl; exact integer sums).
//
// Numerics are matmul.comp's: the same integer sum per block and float
// expression per block, blocks (or columns) summed in the same order.
//
// Workgroup x (then y) is the row tile, z the token tile.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256; // must be 256: 16 row groups × 16 token groups
#define TR 64u // rows per tile
#define TT 64u // tokens per tile

layout(push_constant) uniform Push {
    uint ncols, nrows, ntok;
    uint xoff;    // x: element offset (float types) or word offset (activation scratch)
    uint doff;    // d: element offset
    uint eoff;    // ADD, BIAS: element offset of e
    uint dstride; // elements between tokens in d (and e)
} pc;

layout(binding = 0) readonly buffer Wt { uint w[]; };
#if defined(W_Q8_0) || defined(W_Q4_0) || defined(W_Q5_0)
#define QUANT_ACT
#define ABW 9u
#elif defined(W_Q4_1) || defined(W_Q5_1)
#define QUANT_ACT
#define Q8_1_ACT
#define ABW 10u
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

#ifdef QUANT_ACT
shared uint sw[NW * TR * 8]; // one block per row: 32 int8 weights in 8 words
shared float sdw[NW * TR];   // its scale
#ifdef Q8_1_ACT
shared float smw[NW * TR];   // its min
shared float ssa[TT];        // the activation block's s
#endif
shared uint sa[TT * 8];      // one block per token: 32 int8 activations
shared float sda[TT];        // its scale
#else
shared float sw[NW * TR * 33]; // 32 columns per row (padded against bank conflicts)
shared float sa[TT * 33];
#endif

void main() {
    const uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint row0 = tile * TR, tok0 = gl_WorkGroupID.z * TT;
    if (row0 >= pc.nrows) {
        return; // the whole workgroup
    }
    const uint tid = gl_LocalInvocationID.x;
    const uint tr = tid % 16u, tt = tid / 16u; // rows tr + 16i, tokens tt + 16j
    float acc[NW * 16];
    for (uint i = 0u; i < NW * 16u; i++) {
        acc[i] = 0.0;
    }
#ifdef QUANT_ACT
    const uint nb = pc.ncols / 32u;
    for (uint b = 0u; b < nb; b++) {
        // Stage: invocations 0..NW·64-1 unpack a row's block, 128..191 copy
        // a token's activation block.
        if (tid < NW * TR) {
            const uint s = tid / TR, r = tid % TR, row = row0 + r;
            uint q[8] = uint[8](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
            float dw = 0.0, mw = 0.0;
            if (row < pc.nrows) {
#if defined(W_Q8_0)
                const uint wb = (row * nb + b) * 34u;
                dw = f16_to_f32(wu16(s, wb));
                for (uint k = 0u; k < 8u; k++) {
                    q[k] = wu32(s, wb + 2u + 4u * k);
                }
#else
#if defined(W_Q5_0)
                const uint wb = (row * nb + b) * 22u;
                dw = f16_to_f32(wu16(s, wb));
                const uint qh = wu32(s, wb + 2u);
                const uint qs = wb + 6u;
                const uint off = 16u;
#elif defined(W_Q4_1) || defined(W_Q5_1)
#if defined(W_Q4_1)
                const uint wb = (row * nb + b) * 20u;
                const uint qs = wb + 4u;
                const uint qh = 0u;
#else
                const uint wb = (row * nb + b) * 24u;
                const uint qh = wu32(s, wb + 4u);
                const uint qs = wb + 8u;
#endif
                const uint dm = wu32(s, wb);
                dw = f16_to_f32(dm & 0xffffu);
                mw = f16_to_f32(dm >> 16);
                const uint off = 0u;
#else // Q4_0
                const uint wb = (row * nb + b) * 18u;
                dw = f16_to_f32(wu16(s, wb));
                const uint qh = 0u;
                const uint qs = wb + 2u;
                const uint off = 8u;
#endif
                // Value 4k+i is the low nibble of byte 4k+i, value 16+4k+i
                // its high nibble; Q5 types add bit 4k+i (16+4k+i) of qh
                // (q5_lo/q5_hi, with qh 0 for the 4-bit types), each level
                // less its bias as a signed byte.
                for (uint k = 0u; k < 4u; k++) {
                    const uint word = wu32(s, qs + 4u * k);
                    const uint lo = q5_lo(word, qh, k), hi = q5_hi(word, qh, k);
                    q[k] = off == 0u ? lo : unbias(lo, off);
                    q[4u + k] = off == 0u ? hi : unbias(hi, off);
                }
#endif
            }
            for (uint k = 0u; k < 8u; k++) {
                sw[(s * TR + r) * 8u + k] = q[k];
            }
            sdw[s * TR + r] = dw;
#ifdef Q8_1_ACT
            smw[s * TR + r] = mw;
#endif
        } else if (tid >= 128u && tid < 128u + TT) {
            const uint t = tid - 128u, tok = tok0 + t;
            if (tok < pc.ntok) {
                const uint ab = pc.xoff + (tok * nb + b) * ABW;
                sda[t] = uintBitsToFloat(xq[ab]);
#ifdef Q8_1_ACT
                ssa[t] = uintBitsToFloat(xq[ab + 1u]);
#endif
                for (uint k = 0u; k < 8u; k++) {
                    sa[t * 8u + k] = xq[ab + ABW - 8u + k];
                }
            } else {
                sda[t] = 0.0;
#ifdef Q8_1_ACT
                ssa[t] = 0.0;
#endif
                for (uint k = 0u; k < 8u; k++) {
                    sa[t * 8u + k] = 0u;
                }
            }
        }
        barrier();
        for (uint s = 0u; s < NW; s++) {
            int isum[16];
            for (uint i = 0u; i < 16u; i++) {
                isum[i] = 0;
            }
            for (uint k = 0u; k < 8u; k++) {
                uint wv[4], av[4]; // four signed bytes of a row, of a token
                for (uint i = 0u; i < 4u; i++) {
                    wv[i] = sw[(s * TR + tr + 16u * i) * 8u + k];
                    av[i] = sa[(tt + 16u * i) * 8u + k];
                }
                for (uint i = 0u; i < 4u; i++) {
                    for (uint j = 0u; j < 4u; j++) {
                        isum[4u * i + j] += sdot4(wv[i], av[j]);
                    }
                }
            }
            for (uint i = 0u; i < 4u; i++) {
                const float dw = sdw[s * TR + tr + 16u * i];
                for (uint j = 0u; j < 4u; j++) {
                    const float da = sda[tt + 16u * j];
#if defined(W_Q8_0)
                    acc[s * 16u + 4u * i + j] += float(isum[4u * i + j]) * (dw * da);
#elif defined(W_Q5_0)
                    acc[s * 16u + 4u * i + j] += (dw * da) * float(isum[4u * i + j]);
#elif defined(Q8_1_ACT)
                    precise float v = (dw * da) * float(isum[4u * i + j]) + smw[s * TR + tr + 16u * i] * ssa[tt + 16u * j];
                    acc[s * 16u + 4u * i + j] += v;
#else
                    acc[s * 16u + 4u * i + j] += (float(isum[4u * i + j]) * dw) * da;
#endif
                }
            }
        }
        barrier();
    }
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
        for (uint s = 0u; s < NW; s++) {
            for (uint c = 0u; c < kn; c++) {
                float wv[4], av[4];
                for (uint i = 0u; i < 4u; i++) {
                    wv[i] = sw[(s * TR + tr + 16u * i) * 33u + c];
                    av[i] = sa[(tt + 16u * i) * 33u + c];
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
    for (uint i = 0u; i < 4u; i++) {
        const uint row = row0 + tr + 16u * i;
        for (uint j = 0u; j < 4u; j++) {
            const uint tok = tok0 + tt + 16u * j;
            if (row >= pc.nrows || tok >= pc.ntok) {
                continue;
            }
            const uint o = tok * pc.dstride + row;
            const float v = acc[4u * i + j];
#if defined(ADD)
            d[pc.doff + o] = v + e[pc.eoff + o];
#elif defined(BIAS)
            d[pc.doff + o] = v + e[pc.eoff + row];
#elif defined(GATEUP)
            d[pc.doff + o] = (v / (1.0 + exp(-v))) * acc[16u + 4u * i + j];
#elif defined(GEGLU)
            d[pc.doff + o] = gelu_f16table(v) * acc[16u + 4u * i + j];
#else
            d[pc.doff + o] = v;
#endif
        }
    }
}
