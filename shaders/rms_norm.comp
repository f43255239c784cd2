// RMSNorm (ops/ref RMSNorm, ggml_rms_norm): one workgroup per row of ncols,
// d = x / sqrt(mean(x²) + eps). Variant MUL_WEIGHT multiplies by the norm
// weight w[i] as well (the fused RMSNorm·w). Operands start at element
// offsets; d may alias x exactly.
//
// With MUL_WEIGHT, variants Q8_0, Q8_1, ROUND_F16 (with F16X2: as
// binary16 pairs) and ROUND_BF16 also write the result as the activations
// its matmuls take (quantize.glsl's bits, at word qoff of binding 3, laid
// out as quantize_q8.comp lays them out), saving a decode step that dispatch and its barrier; Q8_0 and Q8_1
// need ncols to be whole blocks of 32. Variant Q8_K writes Q8_K
// super-blocks as quantize_q8k.comp does (the same arithmetic on the same
// values, so the same bits) and needs ncols to be whole super-blocks of
// 256 (WG is a multiple of 256).
//
// A row may be split into gl_NumWorkGroups.z parts (a decode step's one
// row): every part's workgroup sums the whole row's squares, in the same
// order (so the same scale), and writes (and quantizes) chunks z, z +
// parts, … of WG values — less of a single workgroup's serial work. Not
// when d aliases x: one part would overwrite what another still reads.
//
// Numerics: ggml sums the squares in double; this sums in float (per
// invocation, then a tree), which differs in the last bits.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 512; // a decode step normalises one row: wide, so each invocation loads few values

layout(push_constant) uniform Push {
    uint ncols;
    uint nrows;
    float eps;
    uint xoff, doff, woff; // element offsets of x, d and w
    uint qoff;             // word offset of the activations (fused variants)
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer D { float d[]; };
#ifdef MUL_WEIGHT
layout(binding = 2) readonly buffer W { float w[]; };
#endif

#if defined(Q8_0) || defined(Q8_1) || defined(Q8_K) || defined(ROUND_F16) || defined(ROUND_BF16)
layout(binding = 3) writeonly buffer Q { uint q[]; };
#endif
#if defined(Q8_0)
#define BW 9u
#elif defined(Q8_1)
#define BW 10u
#endif
#define Q8_LANES
#ifdef Q8_K
#define Q8K_LANES
#endif

#include "reduce.glsl"
#include "half.glsl"
#include "quantize.glsl"


// CACHED values of x (and w) per invocation stay in registers: 4096 per
// row with WG 512.
const uint CACHED = 8u;

// pick returns v[c] for c < CACHED by selects: a dynamic index would put
// the array in local memory.
float pick(float v[CACHED], uint c) {
    float r = v[0];
    for (uint k = 1u; k < CACHED; k++) {
        r = c == k ? v[k] : r;
    }
    return r;
}

void main() {
    const uint row = wg_row();
    if (row >= pc.nrows) {
        return; // uniform across the workgroup
    }
    const uint t = gl_LocalInvocationID.x;
    const uint part = gl_WorkGroupID.z, stride = WG * gl_NumWorkGroups.z; // chunks of this part: base = WG·part, + stride
    const uint xbase = pc.xoff + row * pc.ncols;
    const uint dbase = pc.doff + row * pc.ncols;
    // precise: no fused multiply-adds, so every variant (each compiled on
    // its own) sums the same way on every driver; NVIDIA's compiler fused
    // v * v + sum in some variants and not others (1-ulp differences).
    // Each invocation's first CACHED values of x (and of w) are loaded
    // together, before any is used, and kept: loaded one per loop step
    // (and again for the quantization) they made a chain of dependent
    // global loads, which bounded a decode step's RMSNorm·w (9.5 µs a
    // node on the H100). The sum's order is unchanged.
    float xv[CACHED];
#ifdef MUL_WEIGHT
    float wv[CACHED];
#endif
    for (uint k = 0u; k < CACHED; k++) {
        const uint i = t + k * WG;
        xv[k] = i < pc.ncols ? x[xbase + i] : 0.0;
#ifdef MUL_WEIGHT
        wv[k] = i < pc.ncols ? w[pc.woff + i] : 0.0;
#endif
    }
    precise float sum = 0.0;
    for (uint k = 0u; k < CACHED; k++) {
        if (t + k * WG < pc.ncols) {
            sum += xv[k] * xv[k];
        }
    }
    for (uint i = t + CACHED * WG; i < pc.ncols; i += WG) {
        const float v = x[xbase + i];
        sum += v * v;
    }
    sum = wg_sum(sum);
    precise const float scale = 1.0 / sqrt(sum / float(pc.ncols) + pc.eps);
#ifdef BW
    // Every invocation quantizes its own value, WG values at a time
    // (q8_lanes, quantize.glsl).
    const uint nb = pc.ncols / 32u;
    for (uint base = WG * part; base < pc.ncols; base += stride) { // uniform: every invocation loops alike
        const uint i = base + t;
        const bool live = i < pc.ncols; // whole blocks: ncols and WG are multiples of 32
        float v = 0.0;
        if (live) {
            const uint c = base / WG;
            v = c < CACHED ? (pick(xv, c) * scale) * pick(wv, c) : (x[xbase + i] * scale) * w[pc.woff + i];
            d[dbase + i] = v;
        }
        q8_lanes(v, live, t, pc.qoff + (row * nb + i / 32u) * BW);
    }
#elif defined(Q8_K)
    // Every invocation quantizes its own value, WG values (whole
    // super-blocks) at a time (q8k_lanes, quantize.glsl).
    const uint nsb = pc.ncols / 256u;
    for (uint base = WG * part; base < pc.ncols; base += stride) { // uniform: every invocation loops alike
        const uint i = base + t;
        const bool live = i < pc.ncols; // the same for a whole super-block
        float v = 0.0;
        if (live) {
            const uint c = base / WG;
            v = c < CACHED ? (pick(xv, c) * scale) * pick(wv, c) : (x[xbase + i] * scale) * w[pc.woff + i];
            d[dbase + i] = v;
        }
        q8k_lanes(v, live, t, pc.qoff + (row * nsb + i / 256u) * 73u);
    }
#elif defined(F16X2)
    // Variant F16X2 (with ROUND_F16): the rounded activations as binary16
    // pairs, ceil(ncols / 2) words a row from word qoff (round_f16x2's
    // layout, which the F16 tensor-core tiles read), an invocation per
    // pair. The values are those of the loop below (the cached x and w are
    // the same floats), read again here: the pairs are not the cache's.
    const uint np = (pc.ncols + 1u) / 2u;
    for (uint j = t + WG * part; j < np; j += stride) {
        uint h = 0u;
        for (uint k = 0u; k < 2u; k++) {
            const uint i = 2u * j + k;
            if (i < pc.ncols) {
                const float v = (x[xbase + i] * scale) * w[pc.woff + i];
                d[dbase + i] = v;
                h |= f32_to_f16(v) << (16u * k);
            }
        }
        q[pc.qoff + row * np + j] = h;
    }
#else
    for (uint i = t + WG * part; i < pc.ncols; i += stride) {
        const uint c = (i - t) / WG;
#ifdef MUL_WEIGHT
        const float v = c < CACHED ? (pick(xv, c) * scale) * pick(wv, c) : (x[xbase + i] * scale) * w[pc.woff + i];
#else
        const float v = c < CACHED ? pick(xv, c) * scale : x[xbase + i] * scale;
#endif
        d[dbase + i] = v;
#if defined(ROUND_F16)
        q[pc.qoff + row * pc.ncols + i] = floatBitsToUint(round_f16(v));
#elif defined(ROUND_BF16)
        q[pc.qoff + row * pc.ncols + i] = bf16_bits(v);
#endif
    }
#endif
}
