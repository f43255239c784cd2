// K-quant weights (Q4_K, Q5_K, Q6_K) by 32-value chunk, for matvec.comp
// and matmul_tiled.comp: the chunk's levels as signed bytes for sdot4 (or
// int8 tensor cores) and its factors, raw, for the caller's float
// expression. The including shader defines wword(s, i), wu16 and wu32
// (word, half word and unaligned word of weight s) and includes
// sdot.glsl (unbias) and half.glsl before it.
//
// Super-block sb (256 values) of a row holds chunks j = 0 … 7. The float
// terms per chunk, in ggml's operand order:
//   Q4_K, Q5_K: (d·dy)·(scale·isum) − (dmin·dy)·(min·bsum)
//   Q6_K:       (d·dy)·(scale0·isum0 + scale1·isum1), one integer sum per
//               16-value group.

#if defined(W_Q4_K) || defined(W_Q5_K)
// Sub-block j's 6-bit scale and min (get_scale_min_k4) from the 12 scale
// bytes at byte offset so.
uint kq_byte(uint word, uint i) { return bitfieldExtract(word, int(i * 8u), 8); }
uvec2 scale_min(uint s, uint so, uint j) {
    const uint a = wword(s, (so >> 2) + 0u), b = wword(s, (so >> 2) + 1u), c = wword(s, (so >> 2) + 2u);
    // bytes 0..3 in a, 4..7 in b, 8..11 in c
    if (j < 4u) {
        return uvec2(kq_byte(a, j) & 63u, kq_byte(b, j) & 63u);
    }
    const uint hi = kq_byte(c, j - 4u);
    return uvec2((hi & 15u) | ((kq_byte(a, j - 4u) >> 6) << 4), (hi >> 4) | ((kq_byte(b, j - 4u) >> 6) << 4));
}
#endif

#if defined(W_Q4_K) || defined(W_Q5_K) || defined(W_Q6_K)
// kq_chunk reads chunk j of super-block sb of weight s's row `row` (nsb
// super-blocks a row): q[k] holds values 4k … 4k+3 as signed bytes
// (Q4_K/Q5_K levels 0 … 31; Q6_K's levels less their bias 32); f the
// binary16 bits of d (low half) and, for Q4_K/Q5_K, dmin (high half); sm
// the chunk's scale (low half) and min (high half), or for Q6_K its two
// groups' signed scale bytes (kq_q6_scales).
void kq_chunk(uint s, uint row, uint nsb, uint sb, uint j, out uint q[8], out uint f, out uint sm) {
#if defined(W_Q4_K) || defined(W_Q5_K)
#if defined(W_Q4_K)
    const uint wb = (row * nsb + sb) * 144u; // word-aligned blocks
    const uint qs = wb + 16u + (j >> 1) * 32u;
#else
    const uint wb = (row * nsb + sb) * 176u; // word-aligned blocks
    const uint qs = wb + 48u + (j >> 1) * 32u;
#endif
    f = wword(s, wb >> 2);
    const uvec2 scm = scale_min(s, wb + 4u, j);
    sm = scm.x | (scm.y << 16);
    for (uint k = 0u; k < 8u; k++) {
        q[k] = (wword(s, (qs >> 2) + k) >> ((j & 1u) * 4u)) & 0x0f0f0f0fu;
#if defined(W_Q5_K)
        q[k] |= ((wword(s, ((wb + 16u) >> 2) + k) >> j) & 0x01010101u) << 4;
#endif
    }
#elif defined(W_Q6_K)
    // 210-byte blocks (only 2-byte aligned): low nibbles at 0, high bit
    // pairs at 128, scales at 192, d at 208.
    const uint wb = (row * nsb + sb) * 210u;
    const uint h = j >> 2, quarter = j & 3u;
    const uint lo = wb + h * 64u + (quarter & 1u) * 32u;
    const uint hi = wb + 128u + h * 32u;
    f = wu16(s, wb + 208u);
    sm = wu16(s, wb + 192u + 2u * j);
    for (uint k = 0u; k < 8u; k++) {
        q[k] = unbias(((wu32(s, lo + 4u * k) >> ((quarter >> 1) * 4u)) & 0x0f0f0f0fu) |
                          (((wu32(s, hi + 4u * k) >> (2u * quarter)) & 0x03030303u) << 4),
                      32u);
    }
#endif
}
#endif

#if defined(W_Q6_K)
// The signed scales of a Q6_K chunk's two 16-value groups.
ivec2 kq_q6_scales(uint sm) { return ivec2(bitfieldExtract(int(sm), 0, 8), bitfieldExtract(int(sm), 8, 8)); }
#endif

// The activations' sum of chunk j's 32 values from its two int16 sums
// (word 65 + j of a Q8_K block).
int kq_bsum(uint bs) { return bitfieldExtract(int(bs), 0, 16) + bitfieldExtract(int(bs), 16, 16); }
