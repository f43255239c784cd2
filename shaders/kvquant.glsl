// Quantized KV cache rows (KV_Q8_0, KV_Q4_0), shared by kv_store.comp,
// rope_kv.comp and flash_attn.comp. A row holds one cell's width values
// (all KV heads) in ggml's blocks of 32 — Q8_0: binary16 d and 32 int8;
// Q4_0: binary16 d and 16 bytes of nibble pairs (j, j+16) — and rows are
// padded to whole words (kv_row_bytes), so that the store shaders write
// whole words: a pair of blocks (68 or 36 bytes) always starts on a word.
// The values are quantized as ggml_cpy does on the CPU (ref.StoreQuantRow):
// Q8_0 with ggml-cpu's vector quantizer (d = amax/127, the values times
// 127/amax rounded to nearest even), Q4_0 with quantize_row_q4_0_ref
// (d = max/−8, the values times 1/d plus 8.5, truncated, at most 15).
// Needs half.glsl.

#if defined(KV_Q8_0)
#define KV_BB 34u
#elif defined(KV_Q4_0)
#define KV_BB 18u
#endif

#ifdef KV_BB
#define KV_QUANT

// kv_row_bytes is the byte stride of cache rows of width values.
uint kv_row_bytes(uint width) { return (width / 32u * KV_BB + 3u) & ~3u; }

// q8v_quant quantizes v[o..o+32) as ggml-cpu's vector quantize_row_q8_0
// does: it returns d (before its binary16 rounding) and writes the int8
// values into q[o..o+32).
float q8v_quant(float v[64], uint o, out int q[64]) {
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) {
        const float a = abs(v[o + j]);
        if (a > amax) {
            amax = a;
        }
    }
    const float id = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
    for (uint j = 0u; j < 32u; j++) {
        precise const float x = v[o + j] * id;
        q[o + j] = int(roundEven(x));
    }
    return div_rn(amax, 127.0);
}

// kv_put ors byte val into byte b of the words w.
void kv_put(inout uint w[17], uint b, uint val) {
    w[b >> 2] |= (val & 0xffu) << ((b & 3u) * 8u);
}

// kv_pack quantizes nb (1 or 2) blocks of v into w, the bytes of the
// blocks one after the other from byte 0 (the rest of w is zero).
void kv_pack(float v[64], uint nb, out uint w[17]) {
    for (uint i = 0u; i < 17u; i++) {
        w[i] = 0u;
    }
    for (uint b = 0u; b < nb; b++) {
        const uint o = b * KV_BB;
#if defined(KV_Q8_0)
        int q[64];
        const uint h = f32_to_f16(q8v_quant(v, 32u * b, q));
        kv_put(w, o, h);
        kv_put(w, o + 1u, h >> 8);
        for (uint j = 0u; j < 32u; j++) {
            kv_put(w, o + 2u + j, uint(q[32u * b + j]));
        }
#else
        float maxv = 0.0, amax = 0.0;
        for (uint j = 0u; j < 32u; j++) {
            const float x = v[32u * b + j];
            if (amax < abs(x)) {
                amax = abs(x);
                maxv = x;
            }
        }
        precise const float d = maxv * -0.125; // maxv / −8, exact
        const float id = d != 0.0 ? div_rn(1.0, d) : 0.0;
        const uint h = f32_to_f16(d);
        kv_put(w, o, h);
        kv_put(w, o + 1u, h >> 8);
        for (uint j = 0u; j < 16u; j++) {
            // (x·id) + 8.5 in two roundings, truncated (C's int8_t cast).
            precise const float x0 = v[32u * b + j] * id;
            precise const float y0 = x0 + 8.5;
            precise const float x1 = v[32u * b + j + 16u] * id;
            precise const float y1 = x1 + 8.5;
            const uint lo = uint(min(15, int(y0))), hi = uint(min(15, int(y1)));
            kv_put(w, o + 2u + j, lo | (hi << 4));
        }
#endif
    }
}

// KV_WORD is the 32 bits from byte b (even) of buffer buf on: blocks
// start on half-words, so a block's bytes may straddle words.
#define KV_WORD(buf, b) (((b) & 2u) == 0u ? buf[(b) >> 2] : ((buf[(b) >> 2] >> 16) | (buf[((b) >> 2) + 1u] << 16)))
// KV_HALF is the binary16 bits at byte b (even) of buf.
#define KV_HALF(buf, b) ((buf[(b) >> 2] >> (((b) & 2u) * 8u)) & 0xffffu)
#endif
