// VkSiLU, a custom op's Vulkan kernel (runtime/vulkan_custom_test.go):
// y = x·σ(beta·x). The push constants are those of every custom kernel
// (ops.VulkanKernel): rows, width, the operand's and the result's element
// offsets, then the attributes (beta). Compiled with
//   glslc --target-env=vulkan1.2 -O -Werror vk_silu.comp -o vk_silu.spv
#version 450

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint rows, width;
    uint xoff, yoff;
    float beta;
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };

void main() {
    const uint n = pc.rows * pc.width;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
        const float v = x[pc.xoff + i];
        y[pc.yoff + i] = v / (1.0 + exp(-pc.beta * v));
    }
}
