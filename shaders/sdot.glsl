// Packed int8 dot products for the int8 matmul kernels (matvec.comp,
// matmul.comp, matmul_tiled.comp), and the Q4/Q5 levels as packed bytes.
// The including shader enables GL_EXT_spirv_intrinsics; the device needs
// Vulkan 1.3's shaderIntegerDotProduct (checked when it is opened).

// OpSDot (4450) with PackedVectorFormat4x8Bit (0): the sum of the four
// products of the signed bytes of a and b (capabilities DotProduct 6019,
// DotProductInput4x8BitPacked 6018). Debian's glslc predates
// GL_EXT_integer_dot_product's dotPacked4x8EXT, which is the same.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4_op(int a, int b, spirv_literal int packedVectorFormat);
int sdot4(uint a, uint b) { return sdot4_op(int(a), int(b), 0); }

// Byte-wise v − bias of bytes 0 ≤ v < 2·bias ≤ 128 as signed bytes:
// v + (128 − bias) stays below 256 (no carry into the next byte), and
// flipping bit 7 subtracts 128 modulo 256.
uint unbias(uint v, uint bias) { return (v + (128u - bias) * 0x01010101u) ^ 0x80808080u; }

// Q5_0/Q5_1: the 5-bit levels of values 4k..4k+3 (low nibbles of word k
// of the block, fifth bits 4k.. of qh) and of values 16+4k.. (high
// nibbles, fifth bits 16+4k..), one byte each.
uint spread4(uint bits) { // bits 0..3 to bit 4 of bytes 0..3
    return ((bits & 1u) | ((bits & 2u) << 7) | ((bits & 4u) << 14) | ((bits & 8u) << 21)) << 4;
}
uint q5_lo(uint w, uint qh, uint k) { return (w & 0x0f0f0f0fu) | spread4(qh >> (4u * k)); }
uint q5_hi(uint w, uint qh, uint k) { return ((w >> 4) & 0x0f0f0f0fu) | spread4(qh >> (16u + 4u * k)); }
