// RMSNorm (ops/ref RMSNorm, ggml_rms_norm): one workgroup per row of ncols,
// d = x / sqrt(mean(x²) + eps). Variant MUL_WEIGHT multiplies by the norm
// weight w[i] as well (the fused RMSNorm·w). Operands start at element
// offsets; d may alias x exactly.
//
// With MUL_WEIGHT, variants Q8_0, Q8_1, ROUND_F16 and ROUND_BF16 also
// write the result as the activations its matmuls take (quantize.glsl's
// bits, at word qoff of binding 3, laid out as quantize_q8.comp lays them
// out), saving a decode step that dispatch and its barrier; Q8_0 and Q8_1
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

#include "reduce.glsl"
#include "half.glsl"
#include "quantize.glsl"

#ifdef BW
shared float blk_abs[WG];     // |value| of each invocation's value
shared float blk_d[WG / 32u]; // each block's scale
shared int blk_q[WG];         // each invocation's int8
#endif
#ifdef Q8_K
shared float sb_v[WG];   // each invocation's value
shared float sb_abs[WG]; // the largest |value| of a range, then of the super-block
shared uint sb_idx[WG];  // its first index within the super-block
shared int sb_q[WG];     // each invocation's int8
#endif

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
    // Every invocation quantizes its own value: per chunk of WG values,
    // the block's scale (by subgroupMax where a subgroup is 32 wide, as on
    // NVIDIA: each is one block; elsewhere by the first lane of each 32
    // through shared memory, as lavapipe's subgroups are narrower than a
    // block), then each lane's int8, then every fourth lane packs a word. The bits are store_q8_block's: the same max, the same
    // per-value products, an exact integer sum.
    const uint nb = pc.ncols / 32u;
    const uint lane = t % 32u;
    for (uint base = WG * part; base < pc.ncols; base += stride) { // uniform: every invocation loops alike
        const uint i = base + t;
        const bool live = i < pc.ncols; // whole blocks: ncols and WG are multiples of 32
        float v = 0.0;
        if (live) {
            const uint c = base / WG;
            v = c < CACHED ? (pick(xv, c) * scale) * pick(wv, c) : (x[xbase + i] * scale) * w[pc.woff + i];
            d[dbase + i] = v;
        }
        float dv;
        int qsum = 0; // Σq of the block, when a subgroup is a block
        if (gl_SubgroupSize == 32u) {
            // A subgroup is one block (both start at multiples of 32):
            // its max by one subgroup operation, no shared memory.
            dv = div_rn(subgroupMax(abs(v)), 127.0);
        } else {
            blk_abs[t] = abs(v);
            barrier();
            if (live && lane == 0u) {
                float amax = 0.0;
                for (uint j = 0u; j < 32u; j++) {
                    const float a = blk_abs[t + j];
                    amax = amax > a ? amax : a;
                }
                blk_d[t / 32u] = div_rn(amax, 127.0);
            }
            barrier();
            dv = blk_d[t / 32u];
        }
        {
            const float id = dv != 0.0 ? div_rn(1.0, dv) : 0.0;
            precise float tq = v * id;
            const int qv = live ? int(round_away(tq)) : 0;
            blk_q[t] = qv;
            if (BW == 10u && gl_SubgroupSize == 32u) {
                qsum = subgroupAdd(qv);
            }
        }
        barrier();
        if (live && lane % 4u == 0u) {
            const uint o = pc.qoff + (row * nb + i / 32u) * BW;
            uint word = 0u;
            for (uint j = 0u; j < 4u; j++) {
                word |= (uint(blk_q[t + j]) & 0xffu) << (8u * j);
            }
            q[o + BW - 8u + lane / 4u] = word;
            if (lane == 0u) {
                q[o] = floatBitsToUint(round_f16(dv));
                if (BW == 10u) {
                    int sum = qsum;
                    if (gl_SubgroupSize != 32u) {
                        for (uint j = 0u; j < 32u; j++) {
                            sum += blk_q[t + j];
                        }
                    }
                    precise float sd = float(sum) * dv;
                    q[o + 1u] = floatBitsToUint(round_f16(sd));
                }
            }
        }
        barrier(); // the next chunk reuses the shared arrays
    }
#elif defined(Q8_K)
    // Every invocation quantizes its own value, WG values (whole
    // super-blocks) at a time: the first index of the largest |value| of
    // each super-block (ties to the lower index, as quantize_q8k) by
    // subgroup operations where subgroups are 32 wide, else by a tree in
    // shared memory, then quantize_q8k's iscale, int8 and d from
    // that value, every fourth lane packing a word and every 32nd the two
    // 16-value sums.
    const uint nsb = pc.ncols / 256u;
    const uint lane = t % 256u, first = t - lane; // within the super-block; its first invocation
    for (uint base = WG * part; base < pc.ncols; base += stride) { // uniform: every invocation loops alike
        const uint i = base + t;
        const bool live = i < pc.ncols; // the same for a whole super-block
        float v = 0.0;
        if (live) {
            const uint c = base / WG;
            v = c < CACHED ? (pick(xv, c) * scale) * pick(wv, c) : (x[xbase + i] * scale) * w[pc.woff + i];
            d[dbase + i] = v;
        }
        sb_v[t] = v;
        const float av = abs(v) > 0.0 ? abs(v) : 0.0; // NaN never chosen, as in quantize_q8k
        float amax;
        uint imax;
        if (gl_SubgroupSize == 32u) {
            // Each subgroup's largest |value| and its first index by
            // subgroup operations, then the first of the super-block's 8
            // largest in index order: one barrier, not eight.
            const float m = subgroupMax(av);
            const uint mi = subgroupMin(av == m ? lane : 256u);
            if (subgroupElect()) {
                sb_abs[t / 32u] = m;
                sb_idx[t / 32u] = mi;
            }
            barrier();
            amax = sb_abs[first / 32u], imax = sb_idx[first / 32u];
            for (uint k = 1u; k < 8u; k++) {
                const float b = sb_abs[first / 32u + k];
                if (b > amax) {
                    amax = b, imax = sb_idx[first / 32u + k];
                }
            }
        } else {
            sb_abs[t] = av;
            sb_idx[t] = lane;
            barrier();
            for (uint s = 128u; s > 0u; s >>= 1) {
                if (lane < s) {
                    const float b = sb_abs[t + s];
                    const uint bi = sb_idx[t + s];
                    if (b > sb_abs[t] || (b == sb_abs[t] && bi < sb_idx[t])) {
                        sb_abs[t] = b;
                        sb_idx[t] = bi;
                    }
                }
                barrier();
            }
            amax = sb_abs[first], imax = sb_idx[first];
        }
        const uint o = pc.qoff + (row * nsb + (base + first) / 256u) * 73u;
        int qv = 0;
        if (amax != 0.0) {
            const float iscale = div_rn(-127.0, sb_v[first + imax]);
            precise float tq = iscale * v;
            qv = min(127, int(roundEven(tq)));
            if (live && lane == 0u) {
                q[o] = floatBitsToUint(div_rn(1.0, iscale));
            }
        } else if (live && lane == 0u) {
            q[o] = 0u;
        }
        sb_q[t] = qv;
        barrier();
        if (live && lane % 4u == 0u) {
            uint word = 0u;
            for (uint j = 0u; j < 4u; j++) {
                word |= (uint(sb_q[t + j]) & 0xffu) << (8u * j);
            }
            q[o + 1u + lane / 4u] = word;
        }
        if (live && lane % 32u == 0u) {
            // Sums of values lane..lane+15 and lane+16..lane+31.
            int s0 = 0, s1 = 0;
            for (uint j = 0u; j < 16u; j++) {
                s0 += sb_q[t + j];
                s1 += sb_q[t + 16u + j];
            }
            q[o + 65u + lane / 32u] = (uint(s0) & 0xffffu) | (uint(s1) << 16);
        }
        barrier(); // the next pass reuses the shared arrays
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
