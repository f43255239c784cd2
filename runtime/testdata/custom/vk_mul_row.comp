// VkMulRow, a custom op's Vulkan kernel (runtime/vulkan_custom_test.go):
// y[r][i] = x[r][i]·w[i], w a weight row in a buffer of its own. Push
// constants as for every custom kernel (ops.VulkanKernel): rows, width,
// the operands' and the result's element offsets. Compiled with
//   glslc --target-env=vulkan1.2 -O -Werror vk_mul_row.comp -o vk_mul_row.spv
#version 450

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint rows, width;
    uint xoff, woff, yoff;
} pc;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer W { float w[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

void main() {
    const uint n = pc.rows * pc.width;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
        y[pc.yoff + i] = x[pc.xoff + i] * w[pc.woff + i % pc.width];
    }
}
