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

#ifdef ROPE_SRC
// rope_one is element e of the head whose first element is ROPE_SRC(head),
// rotated by position pos as rope.comp rotates it: its pair (e, e + half)
// with NeoX, else (e & ~1, e | 1); elements from 2·half on pass through.
// The includer defines ROPE_SRC(i) (its source array) and has push
// constants half_, neox and toff (the table's first element).
float rope_one(uint head, uint e, uint pos) {
    if (e >= 2u * pc.half_) {
        return ROPE_SRC(head + e);
    }
    uint i, lo;
    bool first;
    if (pc.neox != 0u) {
        first = e < pc.half_;
        i = first ? e : e - pc.half_;
        lo = i;
    } else {
        first = (e & 1u) == 0u;
        i = e / 2u;
        lo = e & ~1u;
    }
    const uint hi = pc.neox != 0u ? lo + pc.half_ : lo + 1u;
    const uint ti = pc.toff + 2u * (pos * pc.half_ + i);
    const vec2 r = rope_rot(ROPE_SRC(head + lo), ROPE_SRC(head + hi), table[ti], table[ti + 1u]);
    return first ? r.x : r.y;
}
#endif
