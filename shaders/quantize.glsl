// Activation quantization shared by quantize_q8.comp and the fused
// RMSNorm·w variants of rms_norm.comp, so both give the same bits. The
// including shader declares the output words q[] (or names them QOUT)
// and, for Q8_0/Q8_1 blocks, BW (words per block: 9, or 10 with Q8_1).
// Needs half.glsl.

#ifndef QOUT
#define QOUT q
#endif

#ifdef BW
// store_q8_block writes 32 values as one block at word o, as the CPU
// backend quantizes them (quant.QuantizeRow, ggml's quantize_row_q8_0):
// d = max|v|/127, q = round(v/d) with halves away from zero, the float
// value of binary16 d, then the 32 int8 in 8 words; with Q8_1 (BW 10) the
// float value of binary16 s = Σq · d (d before its rounding) after d.
void store_q8_block(uint o, float v[32]) {
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) {
        const float a = abs(v[j]);
        amax = amax > a ? amax : a;
    }
    const float dv = div_rn(amax, 127.0);
    const float id = dv != 0.0 ? div_rn(1.0, dv) : 0.0;
    QOUT[o] = floatBitsToUint(round_f16(dv));
    int sum = 0;
    for (uint k = 0u; k < 8u; k++) {
        uint word = 0u;
        for (uint j = 0u; j < 4u; j++) {
            precise float t = v[4u * k + j] * id;
            const int qv = int(round_away(t));
            sum += qv;
            word |= (uint(qv) & 0xffu) << (8u * j);
        }
        QOUT[o + BW - 8u + k] = word;
    }
    if (BW == 10u) {
        precise float sd = float(sum) * dv;
        QOUT[o + 1u] = floatBitsToUint(round_f16(sd));
    }
}
#endif

#if defined(BW) && defined(Q8_LANES)
#ifndef Q8_STORE_D
#define Q8_STORE_D(d) round_f16(d) // the block's scale as stored: binary16-rounded
#endif
// q8_lanes quantizes one value per invocation, as store_q8_block would
// its block: the includer defines Q8_LANES and a workgroup of WG
// invocations (a multiple of 32) whose values are whole blocks, block
// t/32 of this chunk written at word o (the same for its 32 lanes; live
// false: no value, no write). The block's scale comes by subgroupMax
// where a subgroup is 32 wide, as on NVIDIA: each is one block; elsewhere
// by the first lane of each 32 through shared memory, as lavapipe's
// subgroups are narrower than a block. Then each lane's int8, and every
// fourth lane packs a word. The bits are store_q8_block's: the same max,
// the same per-value products, an exact integer sum. Every invocation
// must call it (barriers), and it ends with one: the next chunk may reuse
// the shared arrays.
shared float blk_abs[WG];     // |value| of each invocation's value
shared float blk_d[WG / 32u]; // each block's scale
shared int blk_q[WG];         // each invocation's int8
void q8_lanes(float v, bool live, uint t, uint o) {
    const uint lane = t % 32u;
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
        uint word = 0u;
        for (uint j = 0u; j < 4u; j++) {
            word |= (uint(blk_q[t + j]) & 0xffu) << (8u * j);
        }
        QOUT[o + BW - 8u + lane / 4u] = word;
        if (lane == 0u) {
            QOUT[o] = floatBitsToUint(Q8_STORE_D(dv));
            if (BW == 10u) {
                int sum = qsum;
                if (gl_SubgroupSize != 32u) {
                    for (uint j = 0u; j < 32u; j++) {
                        sum += blk_q[t + j];
                    }
                }
                precise float sd = float(sum) * dv;
                QOUT[o + 1u] = floatBitsToUint(round_f16(sd));
            }
        }
    }
    barrier();
}
#endif

#ifdef Q8K_LANES
// q8k_lanes quantizes one value per invocation into Q8_K super-blocks, as
// quantize_q8k.comp's reference does (quant.QuantizeRow): the includer
// defines Q8K_LANES and a workgroup of WG invocations (a multiple of 256)
// whose values are whole super-blocks, super-block t/256 of this chunk
// written at word o (the same for its 256 lanes; live is the same for
// them too). The first index of the largest |value| of each super-block
// (ties to the lower index) by subgroup operations where subgroups are 32
// wide, else by a tree in shared memory, then the iscale, int8 and d from
// that value, every fourth lane packing a word and every 32nd the two
// 16-value sums. Every invocation must call it (barriers); it ends with
// one.
shared float sb_v[WG];   // each invocation's value
shared float sb_abs[WG]; // the largest |value| of a range, then of the super-block
shared uint sb_idx[WG];  // its first index within the super-block
shared int sb_q[WG];     // each invocation's int8
void q8k_lanes(float v, bool live, uint t, uint o) {
    const uint lane = t % 256u, first = t - lane; // within the super-block; its first invocation
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
    int qv = 0;
    if (amax != 0.0) {
        const float iscale = div_rn(-127.0, sb_v[first + imax]);
        precise float tq = iscale * v;
        qv = min(127, int(roundEven(tq)));
        if (live && lane == 0u) {
            QOUT[o] = floatBitsToUint(div_rn(1.0, iscale));
        }
    } else if (live && lane == 0u) {
        QOUT[o] = 0u;
    }
    sb_q[t] = qv;
    barrier();
    if (live && lane % 4u == 0u) {
        uint word = 0u;
        for (uint j = 0u; j < 4u; j++) {
            word |= (uint(sb_q[t + j]) & 0xffu) << (8u * j);
        }
        QOUT[o + 1u + lane / 4u] = word;
    }
    if (live && lane % 32u == 0u) {
        // Sums of values lane..lane+15 and lane+16..lane+31.
        int s0 = 0, s1 = 0;
        for (uint j = 0u; j < 16u; j++) {
            s0 += sb_q[t + j];
            s1 += sb_q[t + 16u + j];
        }
        QOUT[o + 65u + lane / 32u] = (uint(s0) & 0xffffu) | (uint(s1) << 16);
    }
    barrier();
}
#endif

#ifdef Q8K_QUADS
// q8k_quads quantizes a super-block of 256 values, xv (invocation l's
// values 4l … 4l+3, in registers: the caller loads or computes them once),
// into the Q8_K super-block at word o, as quant.QuantizeRow does, in a
// workgroup of 64 invocations (WG must be 64): the first index of the
// largest |value| (ties to the lower index) by subgroup operations within
// each subgroup (its largest, then the least index holding it, whose
// invocation passes on its signed value) and across the subgroups in
// order through shared memory, then the iscale, int8 and d from that
// value, and per 16 values the int16 sum of four invocations' exact sums.
// Two barriers where the shared-memory tree took eight; the values are
// read once (session 20 read them twice from their source). Every
// invocation must call it (barriers); it ends with one. Needs
// GL_KHR_shader_subgroup_arithmetic.
shared float samax[64];
shared float sval[64];
shared int sq[64];
void q8k_quads(vec4 xv, uint o) {
    const uint l = gl_LocalInvocationID.x;
    // The first index of the largest |value| among this invocation's 4 (and
    // its signed value), then within its subgroup, then across the
    // subgroups in order.
    float am = 0.0, av = 0.0;
    uint ai = 0xffffffffu;
    for (uint j = 0u; j < 4u; j++) {
        const float a = abs(xv[j]);
        if (am < a) {
            am = a;
            ai = 4u * l + j;
            av = xv[j];
        }
    }
    const float sm = subgroupMax(am);
    const uint si = subgroupMin(am == sm ? ai : 0xffffffffu);
    if (subgroupElect()) {
        samax[gl_SubgroupID] = sm;
    }
    if (ai == si && si != 0xffffffffu) { // one invocation: indices are distinct
        sval[gl_SubgroupID] = av;
    }
    barrier();
    float amax = samax[0], mv = sval[0]; // sval[k] written where samax[k] > 0
    for (uint k = 1u; k < gl_NumSubgroups; k++) {
        const float b = samax[k];
        if (b > amax) { // a later subgroup's indices are higher: strictly larger only
            amax = b;
            mv = sval[k];
        }
    }
    uint word = 0u;
    int qs = 0; // the exact sum of this invocation's 4 levels
    if (amax != 0.0) {
        const float iscale = div_rn(-127.0, mv);
        for (uint j = 0u; j < 4u; j++) {
            precise float v = iscale * xv[j];
            const int qv = min(127, int(roundEven(v)));
            qs += qv;
            word |= (uint(qv) & 0xffu) << (8u * j);
        }
        if (l == 0u) {
            QOUT[o] = floatBitsToUint(div_rn(1.0, iscale));
        }
    } else if (l == 0u) {
        QOUT[o] = 0u;
    }
    QOUT[o + 1u + l] = word;
    sq[l] = qs;
    barrier();
    if (l < 8u) {
        // Sums of values 32l..32l+15 and 32l+16..32l+31.
        const int s0 = sq[8u * l] + sq[8u * l + 1u] + sq[8u * l + 2u] + sq[8u * l + 3u];
        const int s1 = sq[8u * l + 4u] + sq[8u * l + 5u] + sq[8u * l + 6u] + sq[8u * l + 7u];
        QOUT[o + 65u + l] = (uint(s0) & 0xffffu) | (uint(s1) << 16);
    }
    barrier();
}
#endif

// bf16_bits is f rounded to bfloat16, as quant.FP32ToBF16 (nearest even,
// NaNs made quiet), as the bits of a float32.
uint bf16_bits(float f) {
    const uint u = floatBitsToUint(f);
    return (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u) & 0xffff0000u
                                           : ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;
}
