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

// bf16_bits is f rounded to bfloat16, as quant.FP32ToBF16 (nearest even,
// NaNs made quiet), as the bits of a float32.
uint bf16_bits(float f) {
    const uint u = floatBitsToUint(f);
    return (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u) & 0xffff0000u
                                           : ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;
}
