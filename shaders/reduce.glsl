// Workgroup reductions by subgroup operations: each subgroup reduces its
// values, then the subgroups' partials (one word each in shared memory)
// are reduced again by subgroups, until one value is left — a tree, as
// accurate as the shared-memory tree it replaced, with two barriers per
// level instead of one per halving (NVIDIA: 512 invocations are one
// extra level of 16 partials). Any subgroup size works (lavapipe 8,
// NVIDIA 32, AMD 64); WG, the workgroup size, is a multiple of it. Every
// invocation must call them (they contain barriers); all get the result.
#extension GL_KHR_shader_subgroup_arithmetic : require

shared float red[WG];

// wg_level moves the partial of each subgroup (in v) to shared memory and
// hands invocation i partial i (or e, the identity), n partials in all.
float wg_level(float v, uint n, float e) {
    if (subgroupElect()) {
        red[gl_SubgroupID] = v;
    }
    barrier();
    const uint l = gl_LocalInvocationID.x;
    const float p = l < n ? red[l] : e;
    barrier();
    return p;
}

// wg_result shares subgroup 0's total with the whole workgroup.
float wg_result(float v) {
    if (gl_SubgroupID == 0u && subgroupElect()) {
        red[0] = v;
    }
    barrier();
    const float r = red[0];
    barrier(); // red may be reused at once
    return r;
}

float wg_sum(float v) {
    v = subgroupAdd(v);
    for (uint n = gl_NumSubgroups; n > 1u; n = (n + gl_SubgroupSize - 1u) / gl_SubgroupSize) {
        v = subgroupAdd(wg_level(v, n, 0.0));
    }
    return wg_result(v);
}

float wg_max(float v) {
    v = subgroupMax(v);
    for (uint n = gl_NumSubgroups; n > 1u; n = (n + gl_SubgroupSize - 1u) / gl_SubgroupSize) {
        v = subgroupMax(wg_level(v, n, -1.0 / 0.0));
    }
    return wg_result(v);
}

// Rows beyond 65535 workgroups spill into y: row = y·(groups in x) + x.
uint wg_row() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
