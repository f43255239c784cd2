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
    for (uint lane = t; lane < NORM_LANES; lane += WG) {
        precise float s = 0.0;
        for (uint i = lane; i < n; i += NORM_LANES) {
            const float v = NORM_X(base + i);
            s += v * v;
        }
        norm_part[lane] = s;
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
