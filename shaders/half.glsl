// Binary16 and quantized-block helpers shared by the shaders.

// f32_to_f16 rounds f to binary16 bits, to nearest even, exactly as
// quant.FP32ToFP16 (and vcvtps2ph) does: overflow gives infinity, tiny
// values become subnormals or zero, NaNs stay NaN. packHalf2x16 leaves the
// rounding mode to the implementation, so the shaders never use it to
// round.
uint f32_to_f16(float f) {
    const uint bits = floatBitsToUint(f);
    const uint sign = (bits >> 16) & 0x8000u;
    const int e = int((bits >> 23) & 0xffu) - 127 + 15;
    const uint mant = bits & 0x7fffffu;
    if (((bits >> 23) & 0xffu) == 0xffu) {
        return mant != 0u ? (sign | 0x7e00u | (mant >> 13)) : (sign | 0x7c00u);
    }
    if (e >= 31) {
        return sign | 0x7c00u;
    }
    if (e <= 0) {
        const uint shift = uint(14 - e);
        if (shift > 24u) {
            return sign;
        }
        const uint m = mant | 0x800000u;
        uint q = m >> shift;
        const uint rem = m & ((1u << shift) - 1u);
        const uint halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (q & 1u) == 1u)) {
            q++;
        }
        return sign | q;
    }
    uint q = (uint(e) << 10) | (mant >> 13);
    const uint rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u) == 1u)) {
        q++;
    }
    return sign | q;
}

float f16_to_f32(uint h) { return unpackHalf2x16(h & 0xffffu).x; }

// round_f16 rounds f to the nearest binary16 value (ties to even).
float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

// div_rn is a/b correctly rounded (normal operands and quotient, as in
// the quantizers' and softmax's uses): GLSL's division may be off by 2.5
// ulp, so q is corrected by one Newton step on the residual a − q·b. The
// residual is computed without fma, by Dekker's exact product: GLSL's fma
// need not be exact (on lavapipe it is not, and the fma-based step left
// 1-2 ulp errors that changed a Q8_0/Q8_K quant now and then).
void split_f32(float x, out float hi, out float lo) {
    precise const float t = 4097.0 * x;
    precise const float h = t - (t - x);
    hi = h;
    precise const float l = x - h;
    lo = l;
}
float div_rn(float a, float b) {
    const float q = a / b;
    float qh, ql, bh, bl;
    split_f32(q, qh, ql);
    split_f32(b, bh, bl);
    precise const float p = q * b;
    precise const float e = ((qh * bh - p) + qh * bl + ql * bh) + ql * bl; // q·b = p + e exactly
    precise const float r = (a - p) - e;                                       // a − p is exact (Sterbenz)
    precise const float o = q + r / b;
    return o;
}

// round_away is C's roundf: halves away from zero (GLSL's round() leaves
// halves to the implementation). x - trunc(x) is exact.
float round_away(float x) {
    const float t = trunc(x);
    return abs(x - t) >= 0.5 ? t + sign(x) : t;
}
