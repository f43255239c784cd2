// Workgroup reductions through shared memory. They assume nothing about
// the subgroup size (lavapipe 8, NVIDIA 32, AMD 64): WG, the workgroup
// size, must be a power of two. Every invocation must call them
// (they contain barriers); all get the result.

shared float red[WG];

float wg_sum(float v) {
    const uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) {
            red[t] += red[t + s];
        }
        barrier();
    }
    const float r = red[0];
    barrier(); // red may be reused at once
    return r;
}

float wg_max(float v) {
    const uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) {
            red[t] = max(red[t], red[t + s]);
        }
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}

// Rows beyond 65535 workgroups spill into y: row = y·(groups in x) + x.
uint wg_row() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
