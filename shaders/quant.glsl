// Reading weights of every type from a uint buffer `w` (little-endian
// bytes). Include after declaring `w`. Block types are the GGUF layouts:
//   Q8_0: 34 bytes per 32 values: d (f16) | 32 int8
//   Q4_0: 18 bytes per 32 values: d (f16) | 16 bytes, value j in the low
//         nibble of byte j, value j+16 in the high nibble, minus 8.
//   BF16, Q5_0, Q4_1, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS,
//   the lattice types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M
//   (lattice.glsl) and the ternary TQ1_0, TQ2_0: see w_value below.
// Every block starts at an even byte, so a 16-bit field never straddles
// two words.

uint w_byte(uint off) { return (w[off >> 2] >> ((off & 3u) * 8u)) & 0xffu; }
uint w_u16(uint off) { return (w[off >> 2] >> ((off & 2u) * 8u)) & 0xffffu; }
// w_u32 reads 4 bytes at any byte offset.
uint w_u32(uint off) {
    const uint s = (off & 3u) * 8u;
    const uint lo = w[off >> 2];
    return s == 0u ? lo : (lo >> s) | (w[(off >> 2) + 1u] << (32u - s));
}
int sbyte(uint word, uint i) { return int(bitfieldExtract(int(word), int(i * 8u), 8)); }

#include "iq_tables.glsl"

#if defined(W_F32)
#define BLOCK 1u
float w_value(uint i) { return uintBitsToFloat(w[i]); }
#elif defined(W_F16)
#define BLOCK 1u
float w_value(uint i) { return f16_to_f32(w_u16(2u * i)); }
#elif defined(W_Q8_0)
#define BLOCK 32u
#define BLOCK_BYTES 34u
float w_value(uint i) {
    const uint b = (i / 32u) * BLOCK_BYTES;
    return float(sbyte(w_byte(b + 2u + (i % 32u)), 0u)) * f16_to_f32(w_u16(b));
}
#elif defined(W_Q4_0)
#define BLOCK 32u
#define BLOCK_BYTES 18u
float w_value(uint i) {
    const uint b = (i / 32u) * BLOCK_BYTES;
    const uint j = i % 32u;
    const uint q = w_byte(b + 2u + (j & 15u));
    return float(int(j < 16u ? (q & 15u) : (q >> 4)) - 8) * f16_to_f32(w_u16(b));
}
#elif defined(W_Q5_0)
// Q5_0: 22 bytes per 32 values: d (f16) | qh (u32) | 16 bytes of nibbles
// as Q4_0; bit j of qh is value j's fifth bit; minus 16.
#define BLOCK 32u
#define BLOCK_BYTES 22u
float w_value(uint i) {
    const uint b = (i / 32u) * BLOCK_BYTES;
    const uint j = i % 32u;
    const uint q = w_byte(b + 6u + (j & 15u));
    const uint h = (w_u32(b + 2u) >> j) & 1u;
    return float(int((j < 16u ? (q & 15u) : (q >> 4)) | (h << 4)) - 16) * f16_to_f32(w_u16(b));
}
#elif defined(W_BF16)
#define BLOCK 1u
float w_value(uint i) { return uintBitsToFloat(w_u16(2u * i) << 16); }
#elif defined(W_Q4_1) || defined(W_Q5_1)
// Q4_1: 20 bytes per 32 values: d, m (f16) | 16 bytes of nibbles as Q4_0.
// Q5_1: 24 bytes: d, m | qh (u32, bit j is value j's fifth bit) | 16
// bytes of nibbles. Value q·d + m, rounded after each operation.
#define BLOCK 32u
#ifdef W_Q4_1
#define BLOCK_BYTES 20u
#define QS 4u
#else
#define BLOCK_BYTES 24u
#define QS 8u
#endif
float w_value(uint i) {
    const uint b = (i / 32u) * BLOCK_BYTES;
    const uint j = i % 32u;
    const uint q = w_byte(b + QS + (j & 15u));
    uint v = j < 16u ? (q & 15u) : (q >> 4);
#ifdef W_Q5_1
    v |= ((w_u32(b + 4u) >> j) & 1u) << 4;
#endif
    precise float r = float(v) * f16_to_f32(w_u16(b)) + f16_to_f32(w_u16(b + 2u));
    return r;
}
#elif defined(W_Q2_K)
// Q2_K: 84 bytes per 256 values: 16 scale bytes (low nibble the scale,
// high nibble the min of 16 values) | 64 bytes of 2-bit levels (value i:
// byte 16 + i/128·32 + i%32, bits 2·(i%128/32)) | d, dmin (f16). Value
// (d·sc)·q − dmin·m as the CPU rounds it; d·sc and the product with q are
// exact in float32 (11 + 4 + 2 significant bits), so only the subtraction
// rounds.
#define BLOCK 256u
#define BLOCK_BYTES 84u
float w_value(uint i) {
    const uint b = (i / 256u) * BLOCK_BYTES;
    const uint r = i % 256u;
    const uint q = (w_byte(b + 16u + (r / 128u) * 32u + r % 32u) >> (2u * ((r % 128u) / 32u))) & 3u;
    const uint sm = w_byte(b + r / 16u);
    precise float v = f16_to_f32(w_u16(b + 80u)) * float(sm & 15u) * float(q) - f16_to_f32(w_u16(b + 82u)) * float(sm >> 4);
    return v;
}
#elif defined(W_Q3_K)
// Q3_K: 110 bytes per 256 values: 32 bytes of high bits (value i: bit i/32
// of byte i%32; clear means minus 4) | 64 bytes of 2-bit levels as Q2_K |
// 12 bytes of 6-bit scales biased by 32 (low nibbles in bytes 0..7, byte
// j%8 with the high nibble for j ≥ 8; top bit pairs in byte 8 + j%4 at
// bits 2·(j/4)) | d (f16). Value d·sc·q, exact in float32.
#define BLOCK 256u
#define BLOCK_BYTES 110u
float w_value(uint i) {
    const uint b = (i / 256u) * BLOCK_BYTES;
    const uint r = i % 256u, j = r / 16u;
    const uint lo = (w_byte(b + 32u + (r / 128u) * 32u + r % 32u) >> (2u * ((r % 128u) / 32u))) & 3u;
    const uint hi = (w_byte(b + r % 32u) >> (r / 32u)) & 1u;
    const uint sl = (w_byte(b + 96u + (j & 7u)) >> (4u * (j >> 3))) & 15u;
    const uint sh = (w_byte(b + 104u + (j & 3u)) >> (2u * (j >> 2))) & 3u;
    precise float v = f16_to_f32(w_u16(b + 108u)) * float(int(sl | (sh << 4)) - 32) * float(int(lo | (hi << 2)) - 4);
    return v;
}
#elif defined(W_Q4_K) || defined(W_Q5_K)
// Q4_K: 144 bytes per 256 values: d, dmin (f16) | 12 bytes of 6-bit scales
// and mins | 128 bytes of nibbles (value i: byte 16 + i/64·32 + i%32,
// high nibble when i%64 ≥ 32). Q5_K: 176 bytes, 32 bytes of fifth bits
// (bit i/32 of byte 16 + i%32) before the nibbles. Value d·sc·q − dmin·m,
// in ggml's operand order.
#define BLOCK 256u
#ifdef W_Q4_K
#define BLOCK_BYTES 144u
#define QS 16u
#else
#define BLOCK_BYTES 176u
#define QS 48u
#endif
float w_value(uint i) {
    const uint b = (i / 256u) * BLOCK_BYTES;
    const uint r = i % 256u, j = r / 32u;
    uint sc, m;
    if (j < 4u) {
        sc = w_byte(b + 4u + j) & 63u;
        m = w_byte(b + 8u + j) & 63u;
    } else {
        sc = (w_byte(b + 8u + j) & 15u) | ((w_byte(b + j) >> 6) << 4);
        m = (w_byte(b + 8u + j) >> 4) | ((w_byte(b + 4u + j) >> 6) << 4);
    }
    uint q = (w_byte(b + QS + (r / 64u) * 32u + r % 32u) >> (4u * (j & 1u))) & 15u;
#ifdef W_Q5_K
    q |= ((w_byte(b + 16u + r % 32u) >> j) & 1u) << 4;
#endif
    precise float v = f16_to_f32(w_u16(b)) * float(sc) * float(q) - f16_to_f32(w_u16(b + 2u)) * float(m);
    return v;
}
#elif defined(W_Q6_K)
// Q6_K: 210 bytes per 256 values: 128 bytes of low nibbles | 64 bytes of
// high bit pairs | 16 int8 scales | d (f16); value d·sc·(level − 32).
#define BLOCK 256u
#define BLOCK_BYTES 210u
float w_value(uint i) {
    const uint b = (i / 256u) * BLOCK_BYTES;
    const uint r = i % 256u, h = r / 128u, quarter = (r % 128u) / 32u, l = r % 32u;
    const uint lo = (w_byte(b + h * 64u + l + (quarter & 1u) * 32u) >> (4u * (quarter >> 1))) & 15u;
    const uint hi = (w_byte(b + 128u + h * 32u + l) >> (2u * quarter)) & 3u;
    const int sc = sbyte(w_byte(b + 192u + r / 16u), 0u);
    precise float v = f16_to_f32(w_u16(b + 208u)) * float(sc) * float(int(lo | (hi << 4)) - 32);
    return v;
}
#elif defined(W_IQ4_NL) || defined(W_IQ4_XS)
// IQ4_NL: 18 bytes per 32 values: d (f16) | 16 bytes of 4-bit indices as
// Q4_0's nibbles. IQ4_XS: 136 bytes per 256 values: d (f16) | scales_h
// (u16) | scales_l (4 bytes) | 128 bytes of indices, 16 per 32-value
// sub-block ib, whose scale is nibble ib of scales_l with bits 2ib, 2ib+1
// of scales_h on top, minus 32. A value is d·level or d·(ls−32)·level,
// exact in float32 (at most 11 + 6 + 7 significant bits).
#ifdef W_IQ4_NL
#define BLOCK 32u
#define BLOCK_BYTES 18u
float w_value(uint i) {
    const uint b = (i / 32u) * BLOCK_BYTES;
    const uint j = i % 32u;
    const uint q = w_byte(b + 2u + (j & 15u));
    return f16_to_f32(w_u16(b)) * float(IQ4_LEVELS[j < 16u ? (q & 15u) : (q >> 4)]);
}
#else
#define BLOCK 256u
#define BLOCK_BYTES 136u
float w_value(uint i) {
    const uint b = (i / 256u) * BLOCK_BYTES;
    const uint r = i % 256u, ib = r / 32u, j = r % 32u;
    const uint ls = ((w_byte(b + 4u + ib / 2u) >> (4u * (ib & 1u))) & 15u) | (((w_u16(b + 2u) >> (2u * ib)) & 3u) << 4);
    const uint q = w_byte(b + 8u + 16u * ib + (j & 15u));
    precise float dl = f16_to_f32(w_u16(b)) * float(int(ls) - 32);
    return dl * float(IQ4_LEVELS[j < 16u ? (q & 15u) : (q >> 4)]);
}
#endif
#elif defined(W_IQ2_XXS) || defined(W_IQ2_XS) || defined(W_IQ2_S) || defined(W_IQ3_XXS) || defined(W_IQ3_S) || defined(W_IQ1_S) || defined(W_IQ1_M) || defined(W_TQ1_0) || defined(W_TQ2_0)
// 256 values per block; the layouts are in lattice.glsl. Every value is
// d·scale·level with the scale and level products exact in float32 (at
// most 11 + 6 + 7 significant bits), so the order of the products does
// not matter and the rows are bit-identical to quant.Dequantize.
#define BLOCK 256u
#define LW(s, i) w[i]
#include "lattice.glsl"
#define BLOCK_BYTES LATTICE_BYTES
float w_value(uint i) { return lattice_value((i / 256u) * BLOCK_BYTES, i % 256u); }
#else
#error "define a weight type"
#endif
