// Activations to Q8_K super-blocks for the K-quant matmuls, as the CPU
// backend quantizes them (quant.QuantizeRow, ggml's quantize_row_q8_K_ref):
// per block of 256, maxv = the first value of largest magnitude,
// iscale = -127/maxv, q = min(127, round-half-even(iscale·x)), d = 1/iscale
// (float32), and per 16 values the int16 sum of their quants. Block b of
// token t is written at word qoff + (t·nb + b)·73 as GGUF's Q8_K bytes: d,
// 64 words of int8, 8 words of int16 pairs. One workgroup per block (a
// grid stride over blocks), 4 values per invocation: WG must be 64.
// Variant LANES (a decode step's, where there are few blocks and the
// latency counts): an invocation per value, WG (a multiple of 256) values
// a workgroup (q8k_lanes); for a prefill's thousands of blocks it was
// slower (every invocation divides for the scale), so it is not the only
// one.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint ncols, ntok;
    uint xoff, qoff;
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Q { uint q[]; };

#include "half.glsl"
#ifdef LANES
#define Q8K_LANES
#include "quantize.glsl"
// An invocation per value (q8k_lanes): the rows of ncols values (whole
// super-blocks) lie one after another, so value i is in super-block i/256
// of the batch. Workgroups stride over chunks of WG values alike, so every
// invocation reaches q8k_lanes' barriers.
void main() {
    const uint n = pc.ncols * pc.ntok;
    const uint t = gl_LocalInvocationID.x;
    for (uint base = gl_WorkGroupID.x * WG; base < n; base += gl_NumWorkGroups.x * WG) {
        const uint i = base + t;
        const bool live = i < n;
        q8k_lanes(live ? x[pc.xoff + i] : 0.0, live, t, pc.qoff + (i / 256u) * 73u);
    }
}
#else
shared float samax[64];
shared uint sidx[64];
shared uint sq[64];

void main() {
    const uint nb = pc.ncols / 256u;
    const uint l = gl_LocalInvocationID.x;
    for (uint i = gl_WorkGroupID.x; i < nb * pc.ntok; i += gl_NumWorkGroups.x) {
        const uint base = pc.xoff + (i / nb) * pc.ncols + (i % nb) * 256u;
        // The first index of the largest |x| among this invocation's 4,
        // then across the workgroup (ties to the lower index).
        float am = 0.0;
        uint ai = 0xffffffffu;
        for (uint j = 0u; j < 4u; j++) {
            const float a = abs(x[base + 4u * l + j]);
            if (am < a) {
                am = a;
                ai = 4u * l + j;
            }
        }
        samax[l] = am;
        sidx[l] = ai;
        barrier();
        for (uint s = 32u; s > 0u; s >>= 1) {
            if (l < s) {
                const float b = samax[l + s];
                const uint bi = sidx[l + s];
                if (b > samax[l] || (b == samax[l] && bi < sidx[l])) {
                    samax[l] = b;
                    sidx[l] = bi;
                }
            }
            barrier();
        }
        const float amax = samax[0];
        const uint mi = sidx[0];
        const uint o = pc.qoff + i * 73u;
        uint word = 0u;
        if (amax != 0.0) {
            const float iscale = div_rn(-127.0, x[base + mi]);
            for (uint j = 0u; j < 4u; j++) {
                precise float v = iscale * x[base + 4u * l + j];
                const int qv = min(127, int(roundEven(v)));
                word |= (uint(qv) & 0xffu) << (8u * j);
            }
            if (l == 0u) {
                q[o] = floatBitsToUint(div_rn(1.0, iscale));
            }
        } else if (l == 0u) {
            q[o] = 0u;
        }
        q[o + 1u + l] = word;
        sq[l] = word;
        barrier();
        if (l < 8u) {
            // Sums of values 32l..32l+15 and 32l+16..32l+31.
            int s0 = 0, s1 = 0;
            for (uint k = 0u; k < 4u; k++) {
                for (uint j = 0u; j < 4u; j++) {
                    s0 += bitfieldExtract(int(sq[8u * l + k]), int(8u * j), 8);
                    s1 += bitfieldExtract(int(sq[8u * l + 4u + k]), int(8u * j), 8);
                }
            }
            q[o + 65u + l] = (uint(s0) & 0xffffu) | (uint(s1) << 16);
        }
        barrier();
    }
}
#endif
