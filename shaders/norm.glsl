// The sum of squares of an RMSNorm row in one fixed order, whatever the
// workgroup size: 512 lanes, lane i summing values i, i+512, … in order,
// then a tree over the lanes in shared memory (lane i += lane i+h for
// h = 256, 128, …, 1). rms_norm.comp (512 invocations) and the tail of a
// one-token matvec (tail.glsl, 64) both call it, so a norm fused into the
// matvec before it gives the bits of the norm's own dispatch. precise: no
// fused multiply-adds, on any driver. Subgroup additions would be faster,
// but their order depends on the subgroup size.
//
// The includer defines NORM_X(i), element i of the buffer holding the
// row (which starts at element base), and WG; every invocation must call
// it (it contains barriers).

const uint NORM_LANES = 512u;
shared float norm_part[NORM_LANES];

float norm_sumsq(uint base, uint n) {
    const uint t = gl_LocalInvocationID.x;
    const uint lpt = NORM_LANES / WG; // lanes per invocation: WG is a power of two, 64 to 512
    float s[8];
    for (uint k = 0u; k < 8u; k++) {
        s[k] = 0.0;
    }
    // Four strides of 512 a batch, their loads issued together: a chain
    // of dependent loads from L2 would cost far more than the sums (the
    // matvec tail has 64 invocations for thousands of values). Values
    // beyond n add +0, which leaves a sum of squares unchanged.
    for (uint m0 = 0u; m0 < n; m0 += 4u * NORM_LANES) {
        float v[32];
        for (uint m = 0u; m < 4u; m++) {
            for (uint k = 0u; k < 8u; k++) {
                const uint i = m0 + m * NORM_LANES + t + k * WG;
                v[8u * m + k] = k < lpt && i < n ? NORM_X(base + i) : 0.0;
            }
        }
        for (uint m = 0u; m < 4u; m++) {
            for (uint k = 0u; k < 8u; k++) {
                precise float a = s[k] + v[8u * m + k] * v[8u * m + k];
                s[k] = a;
            }
        }
    }
    for (uint k = 0u; k < lpt; k++) {
        norm_part[t + k * WG] = s[k];
    }
    barrier();
    for (uint h = NORM_LANES / 2u; h > 0u; h >>= 1) {
        for (uint lane = t; lane < h; lane += WG) {
            precise float s = norm_part[lane] + norm_part[lane + h];
            norm_part[lane] = s;
        }
        barrier();
    }
    const float r = norm_part[0];
    barrier(); // norm_part may be reused at once
    return r;
}
