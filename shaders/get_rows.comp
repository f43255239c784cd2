// Row gather (ops/ref GetRows, and SelectRows with W_F32): d[t,:] =
// W[ids[t],:] widened to float32, one workgroup per output row t < n.
// ids are read from the step buffer at word idsoff; the host has checked
// them. Variants by table type: W_F32 (a weight or an activation, from
// element woff), and every other weight type of quant.glsl (woff 0).
// The lattice types (IQ1/IQ2/IQ3) read their lattice table at binding 3.
// A table larger than the device's storage-buffer range lies in several
// buffers: this one holds rows [rbase, rbase+rcount), and output rows
// whose ids fall outside are left to the other buffers' dispatches.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

layout(push_constant) uniform Push {
    uint cols, n;
    uint idsoff, woff, doff;
    uint rbase, rcount;
} pc;

layout(binding = 0) readonly buffer Wt { uint w[]; };
layout(binding = 1) readonly buffer Step { uint step[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

#define GRID_BINDING 3
#include "half.glsl"
#include "quant.glsl"

void main() {
    const uint t = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (t >= pc.n) {
        return;
    }
    const uint id = step[pc.idsoff + t] - pc.rbase; // wraps below rbase
    if (id >= pc.rcount) {
        return;
    }
    const uint src = pc.woff + id * pc.cols;
    // The row's columns are split over the z workgroups (a decode step's
    // one row is otherwise a serial loop of cols/WG loads per invocation).
    for (uint c = gl_WorkGroupID.z * WG + gl_LocalInvocationID.x; c < pc.cols; c += WG * gl_NumWorkGroups.z) {
        d[pc.doff + t * pc.cols + c] = w_value(src + c);
    }
}
