// Package ops is weft's op catalogue: the name, arity, attributes and type
// inference of every op, registered with package graph when this package is
// imported. Pure-Go reference kernels for the ops live in ops/ref; backends
// execute them. A program adds ops of its own with Register (custom.go):
// type inference, a CPU kernel and optionally a Vulkan kernel.
//
// Attribute conventions (all numbers, see graph.Attrs):
//
//	RMSNorm, LayerNorm   eps; RMSNorm(Mul) also group (values normalised together, dividing
//	                     the row; absent or 0: the whole row)
//	Scale, Softmax       scale
//	SoftCap              cap
//	RoPE                 heads, head_dim, dims (rotated dims), base, freq_scale, neox (0/1);
//	                     YaRN: ext_factor, attn_factor, corr_lo, corr_hi (absent: plain RoPE)
//	Attention            heads, kv_heads, head_dim, scale, window (sliding window; absent or 0:
//	                     none), softcap (scores soft-capped before the scale; absent or 0: none);
//	                     the node's Layer picks its KV cache
package ops
