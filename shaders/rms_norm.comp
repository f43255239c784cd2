// RMSNorm (ops/ref RMSNorm, ggml_rms_norm): one workgroup per row of ncols,
// d = x / sqrt(mean(x²) + eps). Variant MUL_WEIGHT multiplies by the norm
// weight w[i] as well (the fused RMSNorm·w). Operands start at element
// offsets; d may alias x exactly.
//
// With MUL_WEIGHT, variants Q8_0, Q8_1, ROUND_F16 and ROUND_BF16 also
// write the result as the activations its matmuls take (quantize.glsl's
// bits, at word qoff of binding 3, laid out as quantize_q8.comp lays them
// out), saving a decode step that dispatch and its barrier; Q8_0 and Q8_1
// need ncols to be whole blocks of 32.
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

#if defined(Q8_0) || defined(Q8_1) || defined(ROUND_F16) || defined(ROUND_BF16)
layout(binding = 3) writeonly buffer Q { uint q[]; };
#endif
#if defined(Q8_0)
#define BW 9u
#elif defined(Q8_1)
#define BW 10u
#endif

#include "reduce.glsl"
#include "half.glsl"
#include "quantize.glsl"

void main() {
    const uint row = wg_row();
    if (row >= pc.nrows) {
        return; // uniform across the workgroup
    }
    const uint t = gl_LocalInvocationID.x;
    const uint xbase = pc.xoff + row * pc.ncols;
    const uint dbase = pc.doff + row * pc.ncols;
    float sum = 0.0;
    for (uint i = t; i < pc.ncols; i += WG) {
        const float v = x[xbase + i];
        sum += v * v;
    }
    sum = wg_sum(sum);
    const float scale = 1.0 / sqrt(sum / float(pc.ncols) + pc.eps);
#ifdef BW
    // Whole blocks per invocation: each block is quantized from the
    // values it has just written.
    const uint nb = pc.ncols / 32u;
    for (uint b = t; b < nb; b += WG) {
        float v[32];
        for (uint j = 0u; j < 32u; j++) {
            const uint i = 32u * b + j;
            v[j] = (x[xbase + i] * scale) * w[pc.woff + i];
        }
        for (uint j = 0u; j < 32u; j++) {
            d[dbase + 32u * b + j] = v[j];
        }
        store_q8_block(pc.qoff + (row * nb + b) * BW, v);
    }
#else
    for (uint i = t; i < pc.ncols; i += WG) {
#ifdef MUL_WEIGHT
        const float v = (x[xbase + i] * scale) * w[pc.woff + i];
#else
        const float v = x[xbase + i] * scale;
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
