// What attention.comp (one workgroup per query head and token) and
// attention_tiled.comp (a workgroup per query head and tile of tokens)
// share: the push constants, the bindings, the KV cache's values (KV_F16
// or KV_F32) and the soft cap. Both compute ops/ref Attention with the
// same numerics; see attention.comp.

layout(push_constant) uniform Push {
    uint heads, kvheads, hd, ntok;
    uint qoff, ooff, posoff;
    float scale;
    uint aoff; // Q8_0, Q8_1: word offset of the output's activation blocks
    uint celloff;
    uint window; // sliding window (llama.cpp's SWA mask): a token sees its last window positions; 0: all
    float softcap, capinv; // Gemma 2: scores become softcap·tanh(score·capinv) before the scale; 0: none
#ifdef ROPE_KV
    // attention.comp's decode variant that rotates and stores the step's
    // own keys (rope_kv.comp's work): q (at qoff), k and v are the
    // unrotated rows in binding 0; the RoPE table from element toff.
    uint koff, voff, toff, half_, neox;
#endif
} pc;

layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer Step { uint step[]; };
#ifdef ROPE_KV
layout(binding = 2) buffer KC { uint kc[]; };
layout(binding = 3) buffer VC { uint vc[]; };
#else
layout(binding = 2) readonly buffer KC { uint kc[]; };
layout(binding = 3) readonly buffer VC { uint vc[]; };
#endif
#if defined(Q8_K) || defined(COOP2)
// Q8_K: read back by a super-block's last workgroup; COOP2
// (attention_cm2.comp): by the workgroup that wrote it, for the blocks
// of the output projection's activations.
layout(binding = 4) coherent buffer O { float o[]; };
#else
layout(binding = 4) writeonly buffer O { float o[]; };
#endif

#include "half.glsl"

// Variants Q8_0 and Q8_1 also write the output as the activation blocks
// of the matmul that reads it (the output projection), as quantize_q8
// would: a head of hd values (a multiple of 32) is hd/32 whole blocks of
// its token's row.
#if defined(Q8_0) || defined(Q8_1) || defined(Q8_K)
layout(binding = 5) writeonly buffer A { uint qa[]; };
#define QOUT qa
#if defined(Q8_0)
#define BW 9u
#elif defined(Q8_1)
#define BW 10u
#endif
#endif
#include "quantize.glsl"

#ifdef ROPE_KV
#if defined(Q8_0) || defined(Q8_1) || defined(Q8_K)
layout(binding = 6) readonly buffer Table { float table[]; };
#else
layout(binding = 5) readonly buffer Table { float table[]; };
#endif
#ifdef Q8_K
// Variant Q8_K (decode, ROPE_KV only): a super-block of the output row
// spans 256/hd heads, so the last of their workgroups to finish (an
// atomic counter per super-block, counting modulo 256/hd from zero)
// quantizes it with q8k_lanes, as quantize_q8k would.
layout(binding = 7) coherent buffer Cnt { uint cnt[]; };
#endif
#define ROPE_SRC(i) q[i]
#include "rope.glsl"
#endif

#if defined(KV_F16)
float kval(uint i) { return f16_to_f32((kc[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu); }
float vval(uint i) { return f16_to_f32((vc[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu); }
// Not unpackHalf2x16: NVIDIA's flushes binary16 subnormals to zero.
vec2 kpair(uint w) {
    const uint u = kc[w];
    return vec2(f16_to_f32(u & 0xffffu), f16_to_f32(u >> 16));
}
#elif defined(KV_F32)
float kval(uint i) { return uintBitsToFloat(kc[i]); }
float vval(uint i) { return uintBitsToFloat(vc[i]); }
vec2 kpair(uint w) { return vec2(uintBitsToFloat(kc[2u * w]), uintBitsToFloat(kc[2u * w + 1u])); }
#else
#error "define KV_F16 or KV_F32"
#endif

// capped soft-caps a raw score as ggml does (·(1/cap), tanh, ·cap).
float capped(float x) {
    return pc.softcap > 0.0 ? tanh(x * pc.capinv) * pc.softcap : x;
}
