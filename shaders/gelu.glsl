// GELU as ggml's CPU computes it (GGML_GELU_FP16, ops/ref GELU): 0 at or
// below -10, x at or above 10, and between them the tanh GELU of x rounded
// to binary16, itself rounded to binary16 (the value of ggml's table).
// The products are rounded as in ggml_gelu_f32 (precise: no contraction);
// the device's tanh may differ from libm's by a few ulp, which moves the
// binary16 result only where it lies next to a rounding point. The tanh
// argument is clamped to ±10, beyond which tanh is ±1 in float32 (and an
// implementation through exp cannot overflow). Needs half.glsl.

float gelu_f16table(float v) {
    if (v <= -10.0) {
        return 0.0;
    }
    if (v >= 10.0) {
        return v;
    }
    const float x = round_f16(v);
    precise const float x3 = (0.044715 * x) * x;
    precise const float inner = (0.79788456080286535587989211986876 * x) * (1.0 + x3);
    precise const float r = (0.5 * x) * (1.0 + tanh(clamp(inner, -10.0, 10.0)));
    return round_f16(r);
}
