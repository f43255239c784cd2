// K-quant weights (Q2_K … Q6_K, IQ4_XS) by 32-value chunk, for matvec.comp
// and matmul_tiled.comp: the chunk's levels as signed bytes for sdot4 (or
// int8 tensor cores) and its factors, raw, for the caller's float
// expression. The including shader defines wword(s, i), wu16 and wu32
// (word, half word and unaligned word of weight s), for Q4_K and Q5_K
// wquad(s, i) (16-byte quad i), and includes
// sdot.glsl (unbias), bw.glsl, half.glsl and, for IQ4_XS, iq_tables.glsl
// before it.
//
// Super-block sb (256 values) of a row holds chunks j = 0 … 7. The float
// terms per chunk, in ggml's operand order:
//   Q4_K, Q5_K: (d·dy)·(scale·isum) − (dmin·dy)·(min·bsum)
//   Q6_K, Q3_K: (d·dy)·(scale0·isum0 + scale1·isum1), one integer sum per
//               16-value group
//   Q2_K:       (d·dy)·(scale0·isum0 + scale1·isum1) − (dmin·dy)·(min0·bsum0
//               + min1·bsum1), the activations' sums per 16-value group
//   IQ4_XS:     (d·dy)·(scale·isum), the levels from IQ4_LEVELS

#if defined(W_Q4_K) || defined(W_Q5_K)
// Sub-block j's 6-bit scale and min (get_scale_min_k4) from the 12 scale
// bytes: bytes 0..3 in a, 4..7 in b, 8..11 in c.
uint kq_byte(uint word, uint i) { return bitfieldExtract(word, int(i * 8u), 8); }
uvec2 scale_min(uint a, uint b, uint c, uint j) {
    if (j < 4u) {
        return uvec2(kq_byte(a, j) & 63u, kq_byte(b, j) & 63u);
    }
    const uint hi = kq_byte(c, j - 4u);
    return uvec2((hi & 15u) | ((kq_byte(a, j - 4u) >> 6) << 4), (hi >> 4) | ((kq_byte(b, j - 4u) >> 6) << 4));
}
#endif

#if defined(W_Q4_K)
// kq4_pair reads chunks j and j + 1 (j even) of super-block sb of weight
// s's row `row` together: they share their 32 level bytes, chunk j's
// levels the low nibbles (lo), chunk j + 1's the high ones (hi), and the
// header; f as kq_chunk's, sm kq_chunk's sm of chunk j (x) and j + 1 (y).
// For matvec.comp's one-weight decode rows whose pairs are one step of
// their lanes (kq4_pair's loads for the whole row issued together).
void kq4_pair(uint s, uint row, uint nsb, uint sb, uint j, out uint lo[8], out uint hi[8], out uint f, out uvec2 sm) {
    const uint wb = (row * nsb + sb) * 144u; // word-aligned blocks
    const uint qs = wb + 16u + (j >> 1) * 32u;
    const uvec4 hdr = wquad(s, wb >> 4);
    const uvec4 l0 = wquad(s, qs >> 4), l1 = wquad(s, (qs >> 4) + 1u);
    f = hdr.x;
    const uvec2 m0 = scale_min(hdr.y, hdr.z, hdr.w, j), m1 = scale_min(hdr.y, hdr.z, hdr.w, j + 1u);
    sm = uvec2(m0.x | (m0.y << 16), m1.x | (m1.y << 16));
    const uint lv[8] = uint[8](l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w);
    for (uint k = 0u; k < 8u; k++) {
        lo[k] = lv[k] & 0x0f0f0f0fu;
        hi[k] = (lv[k] >> 4) & 0x0f0f0f0fu;
    }
}
#endif

#if defined(W_Q4_K) || defined(W_Q5_K) || defined(W_Q6_K) || defined(W_Q2_K) || defined(W_Q3_K) || defined(W_IQ4_XS)
// kq_chunk reads chunk j of super-block sb of weight s's row `row` (nsb
// super-blocks a row): q[k] holds values 4k … 4k+3 as signed bytes
// (Q4_K/Q5_K levels 0 … 31, Q2_K's 0 … 3; Q6_K's and Q3_K's less their
// bias; IQ4_XS's table levels); f the binary16 bits of d (low half) and,
// for Q4_K/Q5_K/Q2_K, dmin (high half); sm the chunk's scale (low half)
// and min (high half) for Q4_K/Q5_K, its two groups' signed scale bytes
// for Q6_K/Q3_K (kq_pair_scales), Q2_K's four nibbles (scale0, min0,
// scale1, min1 from bit 0), IQ4_XS's signed scale byte.
#if defined(W_Q4_K)
// A Q4_K chunk's raw quads (kq4_fetch: the header, then the two quads of
// level bytes it shares with its pair) and their decoding (kq4_decode):
// kq_chunk in two steps, the same operations. NVIDIA's compiler made the
// Q4_K gate·up tiles faster from this form (H200, session 23, two runs
// against the one-function form: Q4_K_M pp512 +1.3–2.1%, 29.7k → 30.3k
// and 29.5–29.9k → 30.0–30.3k); a next-stage prefetch built on it lost
// 5% (with 64 × 128 tiles as well it took 224 registers, even).
void kq4_fetch(uint s, uint row, uint nsb, uint sb, uint j, out uvec4 raw[3]) {
    const uint wb = (row * nsb + sb) * 144u; // word-aligned blocks
    const uint qs = wb + 16u + (j >> 1) * 32u;
    raw[0] = wquad(s, wb >> 4);
    raw[1] = wquad(s, qs >> 4);
    raw[2] = wquad(s, (qs >> 4) + 1u);
}
void kq4_decode(uvec4 raw[3], uint j, out uint q[8], out uint f, out uint sm) {
    f = raw[0].x;
    const uvec2 scm = scale_min(raw[0].y, raw[0].z, raw[0].w, j);
    sm = scm.x | (scm.y << 16);
    const uint lv[8] = uint[8](raw[1].x, raw[1].y, raw[1].z, raw[1].w, raw[2].x, raw[2].y, raw[2].z, raw[2].w);
    for (uint k = 0u; k < 8u; k++) {
        q[k] = (lv[k] >> ((j & 1u) * 4u)) & 0x0f0f0f0fu;
    }
}
#endif

void kq_chunk(uint s, uint row, uint nsb, uint sb, uint j, out uint q[8], out uint f, out uint sm) {
#if defined(W_Q4_K)
    uvec4 raw[3];
    kq4_fetch(s, row, nsb, sb, j, raw);
    kq4_decode(raw, j, q, f, sm);
#elif defined(W_Q5_K)
    const uint wb = (row * nsb + sb) * 176u; // word-aligned blocks
    const uint qs = wb + 48u + (j >> 1) * 32u;
    // A quad a load (wquad): the header (d and dmin, 12 scale bytes),
    // the 32 level bytes and the 32 high-bit bytes.
    const uvec4 hdr = wquad(s, wb >> 4);
    f = hdr.x;
    const uvec2 scm = scale_min(hdr.y, hdr.z, hdr.w, j);
    sm = scm.x | (scm.y << 16);
    const uvec4 l0 = wquad(s, qs >> 4), l1 = wquad(s, (qs >> 4) + 1u);
    const uint lv[8] = uint[8](l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w);
    const uvec4 h0 = wquad(s, (wb + 16u) >> 4), h1 = wquad(s, ((wb + 16u) >> 4) + 1u);
    const uint hb[8] = uint[8](h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w);
    for (uint k = 0u; k < 8u; k++) {
        q[k] = ((lv[k] >> ((j & 1u) * 4u)) & 0x0f0f0f0fu) | (((hb[k] >> j) & 0x01010101u) << 4);
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
    // The 32 bytes at lo and at hi as whole words, each loaded once
    // (bw.glsl): both start 2 bytes into a word when the block does.
    const bool odd = (wb & 2u) != 0u;
    uint lw[9], hw[9];
    BW_LOAD(lw, 9u, s, lo);
    BW_LOAD(hw, 9u, s, hi);
    for (uint k = 0u; k < 8u; k++) {
        q[k] = unbias(((BW_AT0(lw, odd, k) >> ((quarter >> 1) * 4u)) & 0x0f0f0f0fu) |
                          (((BW_AT0(hw, odd, k) >> (2u * quarter)) & 0x03030303u) << 4),
                      32u);
    }
#elif defined(W_Q2_K)
    // 84-byte blocks (word-aligned): scale/min nibbles at 0, levels at
    // 16 (bits 2·(j%4) of the 32 bytes of half j/4), d and dmin at 80.
    const uint wb = (row * nsb + sb) * 84u;
    f = wword(s, (wb + 80u) >> 2);
    sm = wu16(s, wb + 2u * j);
    for (uint k = 0u; k < 8u; k++) {
        q[k] = (wword(s, ((wb + 16u) >> 2) + (j >> 2) * 8u + k) >> (2u * (j & 3u))) & 0x03030303u;
    }
#elif defined(W_Q3_K)
    // 110-byte blocks (only 2-byte aligned): high bits at 0 (bit j of each
    // byte is chunk j's), levels at 32, scales at 96, d at 108. Level
    // lo | hi<<2, biased by 4. Groups 2j and 2j+1: low scale nibbles in
    // bytes (2j)%8 and the next (high nibbles from j = 4 on), top bit
    // pairs in bytes 8 + 2·(j%2) and the next, at bits 2·(j/2).
    const uint wb = (row * nsb + sb) * 110u;
    f = wu16(s, wb + 108u);
    const uint lw = wu16(s, wb + 96u + ((2u * j) & 7u)) >> (4u * (j >> 2));
    const uint hw = wu16(s, wb + 104u + 2u * (j & 1u)) >> (2u * (j >> 1));
    const uint sc0 = ((lw & 15u) | ((hw & 3u) << 4)) - 32u, sc1 = (((lw >> 8) & 15u) | (((hw >> 8) & 3u) << 4)) - 32u;
    sm = (sc0 & 0xffu) | ((sc1 & 0xffu) << 8);
    // The levels' 32 bytes and the high bits' 32 as whole words, each
    // loaded once (bw.glsl): both start 2 bytes into a word when the
    // block does.
    const bool odd = (wb & 2u) != 0u;
    uint lv[9], hb[9];
    BW_LOAD(lv, 9u, s, wb + 32u + (j >> 2) * 32u);
    BW_LOAD(hb, 9u, s, wb);
    for (uint k = 0u; k < 8u; k++) {
        q[k] = unbias(((BW_AT0(lv, odd, k) >> (2u * (j & 3u))) & 0x03030303u) |
                          (((BW_AT0(hb, odd, k) >> j) & 0x01010101u) << 2),
                      4u);
    }
#elif defined(W_IQ4_XS)
    // 136-byte blocks (word-aligned): d, scales_h at 0, scales_l at 4,
    // chunk j's 16 bytes of index pairs at 8 + 16j (byte i of word k:
    // value 4k+i in the low nibble, 16+4k+i in the high one).
    const uint wb = (row * nsb + sb) * 136u;
    const uint dh = wword(s, wb >> 2);
    f = dh & 0xffffu;
    const uint ls = ((bitfieldExtract(wword(s, (wb >> 2) + 1u), int(8u * (j >> 1)), 8) >> (4u * (j & 1u))) & 15u) | (((dh >> (16u + 2u * j)) & 3u) << 4);
    sm = (ls - 32u) & 0xffu;
    for (uint k = 0u; k < 4u; k++) {
        const uint idx = wword(s, ((wb + 8u) >> 2) + 4u * j + k);
        uint lo = 0u, hi = 0u;
        for (uint i = 0u; i < 4u; i++) {
            const uint b = bitfieldExtract(idx, int(8u * i), 8);
            lo |= (uint(IQ4_LEVELS[b & 15u]) & 0xffu) << (8u * i);
            hi |= (uint(IQ4_LEVELS[b >> 4]) & 0xffu) << (8u * i);
        }
        q[k] = lo;
        q[4u + k] = hi;
    }
#endif
}
#endif

// The signed scales of a Q6_K or Q3_K chunk's two 16-value groups (an
// IQ4_XS chunk's one scale in x).
ivec2 kq_pair_scales(uint sm) { return ivec2(bitfieldExtract(int(sm), 0, 8), bitfieldExtract(int(sm), 8, 8)); }

// The activations' sum of chunk j's 32 values from its two int16 sums
// (word 65 + j of a Q8_K block).
int kq_bsum(uint bs) { return bitfieldExtract(int(bs), 0, 16) + bitfieldExtract(int(bs), 16, 16); }
