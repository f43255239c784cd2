// The RoPE rotation shared by rope.comp and rope_kv.comp, so both give
// ref.RoPE's bits with Unfused set.

// rope_rot rotates the pair (x0, x1) by the angle whose cosine and sine
// are c and s: (x0·c − x1·s, x0·s + x1·c), each product rounded on its own
// (`precise`: no fused multiply-add), as ref.RoPE{Unfused: true} computes
// it. The CPU fuses the first product into the sum as ggml's compiled C
// does, but GLSL's fma cannot give that everywhere: lavapipe lowers it to
// a multiply and an add. So Vulkan's RoPE may differ from the CPU's by an
// ulp (docs/decisions.md).
vec2 rope_rot(float x0, float x1, float c, float s) {
    precise float a = x0 * c;
    precise float b = x1 * s;
    precise float p = x0 * s;
    precise float q = x1 * c;
    return vec2(a - b, p + q);
}
