// The last workgroup of a one-token matvec dispatch finishes the output
// vector for the node that reads it, saving that node its own dispatch
// and barrier (a decode step's RMSNorm·w after a residual matmul, or the
// quantization of the SwiGLU output before the FFN down matmul).
//
// Every workgroup writes its rows, makes them visible and counts itself on
// an atomic counter (word pc.cnt of tq); the one that counts last sees
// every row written and does the work of the absorbed node on the whole
// vector, then resets the counter for the next dispatch. With TAIL_NORM
// that is rms_norm.comp's RMSNorm·w (the same sum of squares, norm.glsl,
// and the same products, so the same bits) writing the norm's f32 output
// nd; in both variants the result is then written as the activations of
// the next matmul, as TAIL_KIND says, with the bits quantize_q8.comp,
// quantize_q8k.comp or rms_norm.comp would write. Quantization is
// order-free (maxima and per-value products), so the tail may split the
// work its own way: a thread per Q8_0 block, 8 threads per Q8_K
// super-block, each loading its 32 values at once. One workgroup does the
// tail alone, so what bounds it is the chain of L2 round trips each thread
// waits for: loads are batched, never one per loop step (the first
// version's one-at-a-time loads made the tail cost 14-18 µs on the H100).
//
// The includer declares d (coherent: rows of other workgroups), tq, nd
// and nw (TAIL_NORM), WG, norm.glsl (TAIL_NORM), and the push constants
// nrows (one workgroup a row), doff, cnt, qoff, and with TAIL_NORM eps,
// woff and ndoff.

// TAIL_KIND: what the tail writes at word qoff of tq.
layout(constant_id = 2) const uint TAIL_KIND = 0u;
const uint TK_F32 = 0u;  // nothing (TAIL_NORM: only nd)
const uint TK_Q8_0 = 1u; // Q8_0 blocks (9 words)
const uint TK_Q8_1 = 2u; // Q8_1 blocks (10 words)
const uint TK_Q8_K = 3u; // Q8_K super-blocks (73 words)
const uint TK_F16 = 4u;  // values rounded to binary16, as float32 words
const uint TK_BF16 = 5u; // values rounded to bfloat16, as float32 words

shared bool tail_last;
shared float tk_m[WG]; // Q8_K: the largest |value| of a thread's range, then of its super-block
shared uint tk_i[WG];  // its first index within the super-block
shared float tk_v[WG]; // its value

// tail_v is value i of the finished vector.
float tail_v(uint i, float scale) {
#ifdef TAIL_NORM
    return (d[pc.doff + i] * scale) * nw[pc.woff + i];
#else
    return d[pc.doff + i];
#endif
}

void tail_store_nd(uint i, float v) {
#ifdef TAIL_NORM
    nd[pc.ndoff + i] = v;
#endif
}

// tail_q8 writes Q8_0 (or Q8_1) blocks, one thread a block, its 32
// values loaded together (a chain of loads from L2 is what a tail must
// avoid) and kept in registers.
void tail_q8(uint n, float scale) {
    const uint bw = TAIL_KIND == TK_Q8_1 ? 10u : 9u;
    for (uint b = gl_LocalInvocationID.x; b < n / 32u; b += WG) {
        float v[32];
        for (uint j = 0u; j < 32u; j++) {
            v[j] = tail_v(32u * b + j, scale);
        }
        float amax = 0.0;
        for (uint j = 0u; j < 32u; j++) {
            tail_store_nd(32u * b + j, v[j]);
            const float a = abs(v[j]);
            amax = amax > a ? amax : a;
        }
        const float dv = div_rn(amax, 127.0);
        const float id = dv != 0.0 ? div_rn(1.0, dv) : 0.0;
        const uint o = pc.qoff + b * bw;
        tq[o] = floatBitsToUint(round_f16(dv));
        int sum = 0;
        for (uint k = 0u; k < 8u; k++) {
            uint word = 0u;
            for (uint j = 0u; j < 4u; j++) {
                precise float t = v[4u * k + j] * id;
                const int qv = int(round_away(t));
                sum += qv;
                word |= (uint(qv) & 0xffu) << (8u * j);
            }
            tq[o + bw - 8u + k] = word;
        }
        if (bw == 10u) {
            precise float sd = float(sum) * dv;
            tq[o + 1u] = floatBitsToUint(round_f16(sd));
        }
    }
}

// tail_q8k writes Q8_K super-blocks, 8 threads a super-block, 32 values
// each (loaded together, kept in registers): the first index of the
// largest |value| (ties to the lower index, NaN never chosen, as
// quantize_q8k), then each thread's 8 words of int8 and its two 16-value
// sums.
void tail_q8k(uint n, float scale) {
    const uint l = gl_LocalInvocationID.x, j = l % 8u, first = l - j;
    const uint nsb = n / 256u;
    for (uint base = 0u; base < nsb; base += WG / 8u) { // uniform: every thread loops alike
        const uint sb = base + l / 8u;
        const bool live = sb < nsb;
        const uint v0 = 256u * sb + 32u * j; // this thread's first value
        float v[32];
        for (uint k = 0u; k < 32u; k++) {
            v[k] = live ? tail_v(v0 + k, scale) : 0.0;
        }
        float am = 0.0, av = 0.0; // av: the signed value (no dynamic index into v: it would go to local memory)
        uint ai = 0xffffffffu;
        for (uint k = 0u; k < 32u; k++) {
            if (live) {
                tail_store_nd(v0 + k, v[k]);
            }
            const float a = abs(v[k]);
            if (am < a) {
                am = a;
                ai = 32u * j + k;
                av = v[k];
            }
        }
        tk_m[l] = am;
        tk_i[l] = ai;
        tk_v[l] = av;
        barrier();
        for (uint h = 4u; h > 0u; h >>= 1) {
            if (j < h) {
                const float b = tk_m[l + h];
                const uint bi = tk_i[l + h];
                if (b > tk_m[l] || (b == tk_m[l] && bi < tk_i[l])) {
                    tk_m[l] = b;
                    tk_i[l] = bi;
                    tk_v[l] = tk_v[l + h];
                }
            }
            barrier();
        }
        const float amax = tk_m[first];
        if (live) {
            const uint o = pc.qoff + sb * 73u;
            int s0 = 0, s1 = 0;
            const float iscale = amax != 0.0 ? div_rn(-127.0, tk_v[first]) : 0.0;
            for (uint k = 0u; k < 8u; k++) {
                uint word = 0u;
                if (amax != 0.0) {
                    for (uint i = 0u; i < 4u; i++) {
                        precise float t = iscale * v[4u * k + i];
                        const int qv = min(127, int(roundEven(t)));
                        if (k < 4u) {
                            s0 += qv;
                        } else {
                            s1 += qv;
                        }
                        word |= (uint(qv) & 0xffu) << (8u * i);
                    }
                }
                tq[o + 1u + 8u * j + k] = word;
            }
            tq[o + 65u + j] = (uint(s0) & 0xffffu) | (uint(s1) << 16);
            if (j == 0u) {
                tq[o] = amax != 0.0 ? floatBitsToUint(div_rn(1.0, iscale)) : 0u;
            }
        }
        barrier(); // the next pass reuses tk_m, tk_i and tk_v
    }
}

// tail_finish does the absorbed node's work on the n values of the
// vector; every thread of the last workgroup calls it.
void tail_finish(uint n) {
    float scale = 1.0;
#ifdef TAIL_NORM
    precise const float s = 1.0 / sqrt(norm_sumsq(pc.doff, n) / float(n) + pc.eps);
    scale = s;
#endif
    if (TAIL_KIND == TK_Q8_0 || TAIL_KIND == TK_Q8_1) {
        tail_q8(n, scale);
    } else if (TAIL_KIND == TK_Q8_K) {
        tail_q8k(n, scale);
    } else {
        for (uint i0 = 0u; i0 < n; i0 += 8u * WG) { // 8 values a thread, loaded together
            float v[8];
            for (uint k = 0u; k < 8u; k++) {
                const uint i = i0 + k * WG + gl_LocalInvocationID.x;
                v[k] = i < n ? tail_v(i, scale) : 0.0;
            }
            for (uint k = 0u; k < 8u; k++) {
                const uint i = i0 + k * WG + gl_LocalInvocationID.x;
                if (i < n) {
                    tail_store_nd(i, v[k]);
                    if (TAIL_KIND == TK_F16) {
                        tq[pc.qoff + i] = floatBitsToUint(round_f16(v[k]));
                    } else if (TAIL_KIND == TK_BF16) {
                        tq[pc.qoff + i] = bf16_bits(v[k]);
                    }
                }
            }
        }
    }
}

// tail_count counts this workgroup once its rows are written and runs
// tail_finish in the last one; every thread calls it.
void tail_count(uint n) {
    memoryBarrierBuffer(); // this workgroup's rows, before its count
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        tail_last = atomicAdd(tq[pc.cnt], 1u) == pc.nrows - 1u; // rows beyond nrows do not count
    }
    barrier();
    if (tail_last) { // uniform: a shared value
        memoryBarrierBuffer(); // the other workgroups' rows, after their counts
        tail_finish(n);
        if (gl_LocalInvocationID.x == 0u) {
            tq[pc.cnt] = 0u; // for the next dispatch (after its barrier)
        }
    }
}
