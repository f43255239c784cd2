// Reading weights of every type from a uint buffer `w` (little-endian
// bytes). Include after declaring `w`. Block types are the GGUF layouts:
//   Q8_0: 34 bytes per 32 values: d (f16) | 32 int8
//   Q4_0: 18 bytes per 32 values: d (f16) | 16 bytes, value j in the low
//         nibble of byte j, value j+16 in the high nibble, minus 8.
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
#else
#error "define a weight type"
#endif
