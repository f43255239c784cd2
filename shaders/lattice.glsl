// The 256-value lattice and ternary weight types, as quant reads them
// (quant/iq1.go, iq2.go, iq3.go, tq.go): a block of eight 32-value
// sub-blocks ib of four 8-value groups l. lattice_group returns a group's
// eight values as signed bytes (signs applied, IQ1's ±1/8 shift folded in
// as 8·point ± 1) with its integer scale; the caller multiplies by the
// type's float factor (lattice_scale, LATTICE_DOT in matvec.comp).
//
// The includer defines LW(s, i) (word i of weight s), GRID_BINDING (the
// binding of the lattice table, a storage buffer the host fills with
// shaders.GridTable: IQ types only) and one of W_IQ2_XXS, W_IQ2_XS,
// W_IQ2_S, W_IQ3_XXS, W_IQ3_S, W_IQ1_S, W_IQ1_M, W_TQ1_0, W_TQ2_0.
// Blocks start at even bytes (every size is even).
//
// The tables are a buffer rather than GLSL constants: a constant array
// indexed at run time becomes a per-invocation copy in SPIR-V (glslang's
// Function variable), which lavapipe took seconds to compile and minutes
// to run for IQ2_S's 2048 words; a read-only buffer of a few KiB stays in
// the cache.
//
//   IQ2_XXS (66 bytes): d | per sub-block two u32: four grid indices, then
//           four 7-bit sign codes and a 4-bit scale s (bits 28–31)
//   IQ2_XS (74): d | 32 u16: 9-bit index | 7-bit sign code | 8 bytes of
//           two 4-bit scales (groups 0–1, 2–3)
//   IQ2_S (82): d | 32 index low bytes | 32 sign bytes | 8 bytes of index
//           high bit pairs | 8 scale bytes as IQ2_XS
//   IQ3_XXS (98): d | 64 index bytes (two 4-value points per group) | per
//           sub-block a u32: four sign codes, scale on top
//   IQ3_S (110): d | 64 index low bytes | 8 bytes of ninth bits | 32 sign
//           bytes | 4 bytes of 4-bit scales
//   IQ1_S (50): d | 32 index low bytes | per sub-block a u16: 3 high index
//           bits per group, a 3-bit scale, the shift's sign (bit 15)
//   IQ1_M (56): 32 index low bytes | 16 bytes, a nibble per group (3 high
//           index bits, the shift's sign) | 8 bytes of 3-bit scales (two per
//           sub-block) with d's four nibbles on top of the four u16
//   TQ1_0 (54): 48 bytes of 5 trits | 4 bytes of 4 trits | d (see tq.go)
//   TQ2_0 (66): 64 bytes of four 2-bit fields (t+1) | d
// Sign codes (IQ2_XXS, IQ2_XS, IQ3_XXS) carry 7 signs; the eighth makes
// the count of minus signs even (ksigns).

#if defined(W_IQ2_XXS)
#define LATTICE_BYTES 66u
#elif defined(W_IQ2_XS)
#define LATTICE_BYTES 74u
#elif defined(W_IQ2_S)
#define LATTICE_BYTES 82u
#elif defined(W_IQ3_XXS)
#define LATTICE_BYTES 98u
#elif defined(W_IQ3_S)
#define LATTICE_BYTES 110u
#elif defined(W_IQ1_S)
#define LATTICE_BYTES 50u
#elif defined(W_IQ1_M)
#define LATTICE_BYTES 56u
#elif defined(W_TQ1_0)
#define LATTICE_BYTES 54u
#elif defined(W_TQ2_0)
#define LATTICE_BYTES 66u
#endif
#if defined(W_TQ1_0) || defined(W_TQ2_0)
#define TERNARY
#else
// Point p: IQ2, words 2p and 2p+1 (a byte per value); IQ3, word p; IQ1,
// bits 16·(p%2).. of word p/2 (2 bits per value, value + 1).
layout(binding = GRID_BINDING) readonly buffer Grid { uint grid[]; };
#define GRID(i) grid[i]
#endif

uint lat_byte(uint s, uint off) { return (LW(s, off >> 2) >> ((off & 3u) * 8u)) & 0xffu; }
uint lat_u16(uint s, uint off) { return (LW(s, off >> 2) >> ((off & 2u) * 8u)) & 0xffffu; }
uint lat_u32(uint s, uint off) {
    const uint sh = (off & 3u) * 8u;
    const uint lo = LW(s, off >> 2);
    return sh == 0u ? lo : (lo >> sh) | (LW(s, (off >> 2) + 1u) << (32u - sh));
}

// ksigns expands a 7-bit sign code to 8 sign bits (quant.ksigns).
uint ksigns(uint code) {
    code &= 127u;
    return code | ((uint(bitCount(code)) & 1u) << 7);
}

// apply_signs negates the bytes of g whose sign bit (bits 0–3 of signs) is
// set: ~b + 1, which never carries into the next byte because lattice
// magnitudes are at least 1.
uint apply_signs(uint g, uint signs) {
    const uint m = ((signs & 1u) | ((signs & 2u) << 7) | ((signs & 4u) << 14) | ((signs & 8u) << 21)) * 0xffu;
    return (g ^ m) + (m & 0x01010101u);
}

// lattice_d returns the block's d.
float lattice_d(uint s, uint b) {
#if defined(W_IQ1_M)
    uint h = 0u;
    for (uint k = 0u; k < 4u; k++) {
        h |= (lat_u16(s, b + 48u + 2u * k) >> 12) << (4u * k);
    }
    return f16_to_f32(h);
#elif defined(W_TQ1_0)
    return f16_to_f32(lat_u16(s, b + 52u));
#elif defined(W_TQ2_0)
    return f16_to_f32(lat_u16(s, b + 64u));
#else
    return f16_to_f32(lat_u16(s, b));
#endif
}

#if defined(W_IQ1_S) || defined(W_IQ1_M)
// iq1_bytes returns packed point p's values j0..j0+3 as 8·value + delta.
uint iq1_bytes(uint p, uint j0, int delta) {
    const uint bits = (GRID(p >> 1) >> (16u * (p & 1u) + 2u * j0)) & 0xffu;
    uint q = 0u;
    for (uint j = 0u; j < 4u; j++) {
        q = bitfieldInsert(q, uint(8 * (int((bits >> (2u * j)) & 3u) - 1) + delta), int(8u * j), 8);
    }
    return q;
}
#endif

#if defined(W_TQ1_0)
// tq1_value is element i of a TQ1_0 block as −1, 0 or 1 (quant.tq1Value):
// trit n of byte x is the top of (x·3ⁿ mod 256)·3.
int tq1_value(uint s, uint b, uint i) {
    uint off, n;
    if (i < 160u) {
        off = i % 32u, n = i / 32u;
    } else if (i < 240u) {
        off = 32u + (i - 160u) % 16u, n = (i - 160u) / 16u;
    } else {
        off = 48u + (i - 240u) % 4u, n = (i - 240u) / 4u;
    }
    const uint pow3[5] = uint[5](1u, 3u, 9u, 27u, 81u);
    const uint q = (lat_byte(s, b + off) * pow3[n]) & 0xffu;
    return int((q * 3u) >> 8) - 1;
}
#endif

// lattice_group returns values 0–3 and 4–7 of group l of sub-block ib of
// the block at byte b as signed bytes, and the group's 4-bit (IQ1: 3-bit)
// scale s (0 for the ternary types).
uvec2 lattice_group(uint s, uint b, uint ib, uint l, out uint sc) {
#if defined(W_IQ2_XXS)
    const uint aux0 = lat_u32(s, b + 2u + 8u * ib), aux1 = lat_u32(s, b + 6u + 8u * ib);
    const uint p = (aux0 >> (8u * l)) & 0xffu, sg = ksigns(aux1 >> (7u * l));
    sc = aux1 >> 28;
    return uvec2(apply_signs(GRID(2u * p), sg & 15u), apply_signs(GRID(2u * p + 1u), sg >> 4));
#elif defined(W_IQ2_XS) || defined(W_IQ2_S)
#if defined(W_IQ2_XS)
    const uint v = lat_u16(s, b + 2u + 2u * (4u * ib + l));
    const uint p = v & 511u, sg = ksigns(v >> 9);
    sc = (lat_byte(s, b + 66u + ib) >> (4u * (l >> 1))) & 15u;
#else
    const uint p = lat_byte(s, b + 2u + 4u * ib + l) | ((lat_byte(s, b + 66u + ib) << (8u - 2u * l)) & 0x300u);
    const uint sg = lat_byte(s, b + 34u + 4u * ib + l);
    sc = (lat_byte(s, b + 74u + ib) >> (4u * (l >> 1))) & 15u;
#endif
    return uvec2(apply_signs(GRID(2u * p), sg & 15u), apply_signs(GRID(2u * p + 1u), sg >> 4));
#elif defined(W_IQ3_XXS)
    const uint aux = lat_u32(s, b + 66u + 4u * ib), sg = ksigns(aux >> (7u * l));
    const uint p0 = lat_byte(s, b + 2u + 8u * ib + 2u * l), p1 = lat_byte(s, b + 3u + 8u * ib + 2u * l);
    sc = aux >> 28;
    return uvec2(apply_signs(GRID(p0), sg & 15u), apply_signs(GRID(p1), sg >> 4));
#elif defined(W_IQ3_S)
    const uint qh = lat_byte(s, b + 66u + ib), sg = lat_byte(s, b + 74u + 4u * ib + l);
    const uint p0 = lat_byte(s, b + 2u + 8u * ib + 2u * l) | ((qh << (8u - 2u * l)) & 256u);
    const uint p1 = lat_byte(s, b + 3u + 8u * ib + 2u * l) | ((qh << (7u - 2u * l)) & 256u);
    sc = (lat_byte(s, b + 106u + ib / 2u) >> (4u * (ib & 1u))) & 15u;
    return uvec2(apply_signs(GRID(p0), sg & 15u), apply_signs(GRID(p1), sg >> 4));
#elif defined(W_IQ1_S) || defined(W_IQ1_M)
#if defined(W_IQ1_S)
    const uint qh = lat_u16(s, b + 34u + 2u * ib);
    const uint p = lat_byte(s, b + 2u + 4u * ib + l) | (((qh >> (3u * l)) & 7u) << 8);
    const int delta = (qh & 0x8000u) != 0u ? -1 : 1;
    sc = (qh >> 12) & 7u;
#else
    const uint h = lat_byte(s, b + 32u + 2u * ib + l / 2u) >> (4u * (l & 1u));
    const uint p = lat_byte(s, b + 4u * ib + l) | ((h & 7u) << 8);
    const int delta = (h & 8u) != 0u ? -1 : 1;
    sc = (lat_u16(s, b + 48u + 2u * (ib / 2u)) >> (6u * (ib & 1u) + 3u * (l / 2u))) & 7u;
#endif
    return uvec2(iq1_bytes(p, 0u, delta), iq1_bytes(p, 4u, delta));
#elif defined(W_TQ1_0)
    sc = 0u;
    uvec2 q = uvec2(0u);
    for (uint j = 0u; j < 8u; j++) {
        const uint v = uint(tq1_value(s, b, 32u * ib + 8u * l + j));
        if (j < 4u) {
            q.x = bitfieldInsert(q.x, v, int(8u * j), 8);
        } else {
            q.y = bitfieldInsert(q.y, v, int(8u * (j - 4u)), 8);
        }
    }
    return q;
#elif defined(W_TQ2_0)
    // Bytes 32·(ib/4) + 8l.. hold the group at bits 2·(ib%4); t = field − 1
    // per byte (0x80 + f − 1 never borrows across bytes).
    sc = 0u;
    const uint o = b + 32u * (ib >> 2) + 8u * l, sh = 2u * (ib & 3u);
    const uvec2 f = (uvec2(lat_u32(s, o), lat_u32(s, o + 4u)) >> sh) & 0x03030303u;
    return ((f | 0x80808080u) - 0x01010101u) ^ 0x80808080u;
#endif
}

// lattice_scale is the float factor of a group's signed bytes: value =
// lattice_scale(d, s)·byte, every product exact in float32 (bit-identical
// to quant's dequantization, whatever the operation order).
float lattice_scale(float d, uint sc) {
#if defined(W_IQ2_XXS) || defined(W_IQ2_XS) || defined(W_IQ2_S)
    return (d * (0.5 + float(sc))) * 0.25;
#elif defined(W_IQ3_XXS)
    return (d * (0.5 + float(sc))) * 0.5;
#elif defined(W_IQ3_S)
    return d * float(1u + 2u * sc);
#elif defined(W_IQ1_S) || defined(W_IQ1_M)
    return (d * float(2u * sc + 1u)) * 0.125; // the bytes are 8·(point ± 1/8)
#else
    return d;
#endif
}

// lattice_value returns element r (0..255) of the block at byte b.
float lattice_value(uint b, uint r) {
    uint sc;
    const uvec2 q = lattice_group(0u, b, r / 32u, (r % 32u) / 8u, sc);
    const uint k = r % 8u;
    const int v = bitfieldExtract(int(k < 4u ? q.x : q.y), int(8u * (k % 4u)), 8);
    return lattice_scale(lattice_d(0u, b), sc) * float(v);
}
