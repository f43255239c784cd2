// Package shaders holds weft's GLSL compute shaders (*.comp) and the
// SPIR-V compiled from them, embedded so that users need no shader
// compiler. `make generate` recompiles them with glslc through
// codegen/cmd/shadergen, whose table lists every variant (weight type, op)
// as a set of preprocessor defines; the SPIR-V in spv/, index_gen.go and
// iq_tables.glsl (internal/cmd/shadertables) are generated and committed,
// and `make check-generated` fails when they are stale.
//
// Conventions every shader follows:
//   - storage buffers at bindings 0..n-1 of set 0, outputs last (the
//     lattice weight types then take their table, GridTable, at n);
//     shapes in push constants (std430, 4-byte members);
//   - the workgroup size is specialization constant 0 (Kernel.Workgroup is
//     the default); reductions need it to be a power of two;
//   - no assumption about the subgroup size (8 on lavapipe, 32 on NVIDIA,
//     64 on AMD): reductions go through shared memory;
//   - row kernels take one workgroup per row, rows beyond the x dispatch
//     limit continue in y (row = y·groups_x + x);
//   - the tensor-core variants (define COOP: matmul_coop_*,
//     attention_coop_*) are the exception to the subgroup rule: they use
//     NVIDIA's cooperative matrices in 32-wide subgroups, and a device
//     creates them only when it has both (vulkan.DeviceInfo.RunsKernel);
//   - the cooperative-matrix-2 variants (define COOP2: matmul_cm2_*,
//     attention_cm2_*) use
//     NVIDIA's workgroup-scope matrices and tensor addressing
//     (GL_NV_cooperative_matrix2): SPIR-V for Vulkan 1.3, compiled by a
//     newer glslc than the others (codegen/glslc-trixie.sh: shaderc
//     2025.2, Debian trixie's, fetched and checked on first use; offline,
//     shadergen keeps their committed SPIR-V and says so);
//   - a weight may also be read through a uvec4 view of its binding
//     (16-byte aligned rows: Q4_K, Q5_K); quantized blocks that are only
//     2-byte aligned are read as whole words (bw.glsl), not unaligned ones.
//
// Shader tests can run a mutated variant: WEFT_SHADER_MUTANTS=dir makes
// them take dir/<variant>.spv instead of the embedded SPIR-V (and
// dir/<variant>.wg, where present, as its workgroup size). The same works
// for the kernel benchmarks (BenchmarkMatMulTiled, BenchmarkAttentionCoop),
// so a variant can be timed on a machine without a Go toolchain.
package shaders

// The IQ types' lookup tables (iq_tables.glsl) are generated from quant's
// tables first, then every variant is compiled.
//go:generate go run ../internal/cmd/shadertables -o iq_tables.glsl
//go:generate sh -c "cd ../codegen && go run ./cmd/shadergen -dir ../shaders"
