// Command shadergen compiles weft's GLSL compute shaders (shaders/*.comp)
// to SPIR-V with glslc, one file per variant, and writes the Go index that
// embeds them (shaders/index_gen.go). Variants differ only in preprocessor
// defines listed in the table below, never in copied source.
//
//	go run ./cmd/shadergen -dir ../shaders
//
// glslc comes from the Debian/Ubuntu package glslc (or the Vulkan SDK).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"
)

// variant is one compiled shader.
type variant struct {
	name     string   // file stem and lookup name
	source   string   // .comp file
	defines  []string // -D flags without the -D
	bindings int      // storage buffers, bindings 0..n-1
	push     int      // push-constant bytes
	wg       int      // default workgroup size (specialization constant 0)
}

// cm2 says whether v runs on cooperative matrix 2 (define COOP2): it is
// compiled by the -glslc-cm2 compiler for Vulkan 1.3.
func (v variant) cm2() bool { return slices.Contains(v.defines, "COOP2") }

// The binding and push-constant counts must match the sources' layouts;
// the shaders package's tests dispatch every variant.
var variants = []variant{
	{"add_f32", "binary.comp", []string{"OP_ADD"}, 3, 20, 256},
	{"mul_f32", "binary.comp", []string{"OP_MUL"}, 3, 20, 256},
	{"silu_f32", "silu.comp", nil, 2, 16, 256},
	{"swiglu_f32", "silu.comp", []string{"SWIGLU"}, 3, 16, 256},
	{"copy_f32", "silu.comp", []string{"COPY"}, 2, 16, 256},
	{"gelu_f32", "silu.comp", []string{"GELU"}, 2, 16, 256},
	{"scale_f32", "silu.comp", []string{"SCALE"}, 2, 16, 256},
	{"softcap_f32", "silu.comp", []string{"SOFTCAP"}, 2, 20, 256},
	{"stream_read_u32", "stream_read.comp", nil, 2, 4, 256},
	{"rms_norm_f32", "rms_norm.comp", nil, 2, 28, 512},
	{"rms_norm_mul_f32", "rms_norm.comp", []string{"MUL_WEIGHT"}, 3, 28, 512},
	{"rms_norm_mul_q8_0", "rms_norm.comp", []string{"MUL_WEIGHT", "Q8_0"}, 4, 28, 512},
	{"rms_norm_mul_q8_1", "rms_norm.comp", []string{"MUL_WEIGHT", "Q8_1"}, 4, 28, 512},
	{"rms_norm_mul_q8_k", "rms_norm.comp", []string{"MUL_WEIGHT", "Q8_K"}, 4, 28, 512},
	{"rms_norm_mul_f16", "rms_norm.comp", []string{"MUL_WEIGHT", "ROUND_F16"}, 4, 28, 512},
	{"rms_norm_mul_f16x2", "rms_norm.comp", []string{"MUL_WEIGHT", "ROUND_F16", "F16X2"}, 4, 28, 512},
	{"rms_norm_mul_bf16", "rms_norm.comp", []string{"MUL_WEIGHT", "ROUND_BF16"}, 4, 28, 512},
	{"layer_norm_f32", "layer_norm.comp", nil, 2, 28, 512},
	{"layer_norm_mul_f32", "layer_norm.comp", []string{"MUL_WEIGHT"}, 3, 28, 512},
	{"layer_norm_mul_add_f32", "layer_norm.comp", []string{"MUL_ADD"}, 4, 28, 512},
	{"softmax_f32", "softmax.comp", nil, 2, 20, 128},
	{"quantize_q8_0", "quantize_q8.comp", nil, 2, 16, 64},
	{"quantize_q8_k", "quantize_q8k.comp", nil, 2, 16, 64},
	{"quantize_q8_k_lanes", "quantize_q8k.comp", []string{"LANES"}, 2, 16, 256},
	{"round_f16", "quantize_q8.comp", []string{"ROUND_F16"}, 2, 16, 64},
	{"round_f16x2", "quantize_q8.comp", []string{"ROUND_F16", "F16X2"}, 2, 16, 64},
	{"quantize_q8_1", "quantize_q8.comp", []string{"Q8_1"}, 2, 16, 64},
	{"round_bf16", "quantize_q8.comp", []string{"ROUND_BF16"}, 2, 16, 64},
	{"rope_f32", "rope.comp", nil, 4, 36, 64},
	{"kv_store_f16", "kv_store.comp", []string{"KV_F16"}, 5, 24, 64},
	{"kv_store_f32", "kv_store.comp", []string{"KV_F32"}, 5, 24, 64},
	{"rope_kv_f16", "rope_kv.comp", []string{"KV_F16"}, 6, 52, 64},
	{"rope_kv_f32", "rope_kv.comp", []string{"KV_F32"}, 6, 52, 64},
	{"kv_store_q8_0", "kv_store.comp", []string{"KV_Q8_0"}, 5, 24, 64},
	{"kv_store_q4_0", "kv_store.comp", []string{"KV_Q4_0"}, 5, 24, 64},
	{"rope_kv_q8_0", "rope_kv.comp", []string{"KV_Q8_0"}, 6, 52, 64},
	{"rope_kv_q4_0", "rope_kv.comp", []string{"KV_Q4_0"}, 6, 52, 64},
	{"kv_shift_f16", "kv_shift.comp", []string{"KV_F16"}, 3, 32, 64},
	{"kv_shift_f32", "kv_shift.comp", []string{"KV_F32"}, 3, 32, 64},
}

// weightTypes are the weight types of the matmul and row-gather variants,
// with their defines. matmul.comp (one invocation per row) reads the
// types with rowMatmul set; matmul_tiled.comp (prefill tiles) those with
// tiled set, by tensor cores too where coop is set (int8 block sums;
// F16 products summed in the tensor cores' order); matvec.comp (a
// workgroup per row) reads all. The lattice types (IQ1/IQ2/IQ3) take
// their lattice table at one more binding (shaders.GridTable).
var weightTypes = []struct {
	name, define                 string
	rowMatmul, tiled, grid, coop bool
}{
	{"f32", "W_F32", true, true, false, false}, {"f16", "W_F16", true, true, false, true}, {"q8_0", "W_Q8_0", true, true, false, true}, {"q4_0", "W_Q4_0", true, true, false, true}, {"q5_0", "W_Q5_0", true, true, false, true},
	{"bf16", "W_BF16", true, true, false, false}, {"q4_1", "W_Q4_1", true, true, false, true}, {"q5_1", "W_Q5_1", true, true, false, true},
	{"q4_k", "W_Q4_K", false, true, false, true}, {"q5_k", "W_Q5_K", false, true, false, true}, {"q6_k", "W_Q6_K", false, true, false, true},
	{"q2_k", "W_Q2_K", false, true, false, false}, {"q3_k", "W_Q3_K", false, true, false, false},
	{"iq4_nl", "W_IQ4_NL", false, false, false, false}, {"iq4_xs", "W_IQ4_XS", false, true, false, false},
	{"iq2_xxs", "W_IQ2_XXS", false, false, true, false}, {"iq2_xs", "W_IQ2_XS", false, false, true, false}, {"iq2_s", "W_IQ2_S", false, false, true, false},
	{"iq3_xxs", "W_IQ3_XXS", false, false, true, false}, {"iq3_s", "W_IQ3_S", false, false, true, false}, {"iq1_s", "W_IQ1_S", false, false, true, false}, {"iq1_m", "W_IQ1_M", false, false, true, false},
	{"tq1_0", "W_TQ1_0", false, false, false, false}, {"tq2_0", "W_TQ2_0", false, false, false, false},
}

// block32 are the weight types of 32-value blocks whose tensor-core tiles
// take Q8_0 or Q8_1 activations (matmul_tiled.comp without Q8_K_ACT).
var block32 = map[string]bool{"q8_0": true, "q4_0": true, "q5_0": true, "q4_1": true, "q5_1": true}

// downActivations are the variants of a prefill gate·up (name, of weight
// type wt, compiled with defines) that also write its FFN down's Q8_0 or
// Q8_1 activations (OUT_Q8_0, OUT_Q8_1: name_q8_0, name_q8_1), for the
// 32-value block types; none for the others.
func downActivations(name, wt string, defines []string, wg int) []variant {
	if !block32[wt] {
		return nil
	}
	var out []variant
	for _, kind := range []string{"q8_0", "q8_1"} {
		out = append(out, variant{name + "_" + kind, "matmul_tiled.comp", append(slices.Clone(defines), "OUT_"+strings.ToUpper(kind)), 5, 32, wg})
	}
	return out
}

// cm2Tile is a tile shape of matmul_cm2.comp: tr rows × tt tokens a
// workgroup of wg invocations, tk columns a step.
type cm2Tile struct{ tr, tt, tk, wg int }

// cm2Tiles are matmul_cm2.comp's tile shapes by epilogue ("" the plain
// and residual ones; the variants' names have no suffix), and cm2Others
// the other shapes measured (a suffix each; WEFT_VULKAN_CM2_TILE picks
// them). Measured on the H200 (TinyLlama F16, 512 tokens, session 25):
// see docs/benchmarks-vulkan.md.
var (
	cm2Tiles = map[string]cm2Tile{
		"":        {64, 64, 64, 128},
		"gateup_": {128, 64, 64, 128},
	}
	cm2Others = []cm2Shape{
		{"_t64x64", cm2Tile{64, 64, 64, 128}},
		{"_w128", cm2Tile{64, 128, 64, 128}},
	}
)

// cm2AttnTile is an attention_cm2.comp shape: tq tokens × tk cache rows
// a step, wg invocations.
type cm2AttnTile struct{ tq, tk, wg int }

// cm2AttnShape is an attention_cm2 shape and its variants' name suffix.
type cm2AttnShape struct {
	suffix string
	tile   cm2AttnTile
}

// cm2AttnShapes are attention_cm2.comp's shapes by largest head: the
// default first (no suffix), then others measured beside it on the H200
// (docs/benchmarks-vulkan.md, session 26), kept so that another GPU can
// measure them (WEFT_VULKAN_CM2_ATTN). Heads of 64: 32 tokens × 32 rows
// with 256 invocations took TinyLlama's attention 1 487 → 1 342 µs a
// prefill step against 128; heads of 128 with 128 (a 4-layer model's
// attention 313 → 278 µs at 512 tokens against 64 rows a step).
var cm2AttnShapes = map[int][]cm2AttnShape{
	64: {
		{"", cm2AttnTile{32, 32, 256}},
		{"_w128", cm2AttnTile{32, 32, 128}},
		{"_k64", cm2AttnTile{32, 64, 128}},
	},
	128: {
		{"", cm2AttnTile{32, 32, 128}},
		{"_k64", cm2AttnTile{32, 64, 128}},
	},
}

// cm2Shape is a tile shape and the suffix of its variants' names.
type cm2Shape struct {
	suffix string
	tile   cm2Tile
}

func init() {
	// Attention: a workgroup per (head, token), and per (head, tile of
	// tokens) for prefills; per float KV cache type, and fused with the
	// output projection's Q8_0 or Q8_1 activations.
	for _, src := range []struct {
		name string
		wg   int
	}{{"attention", 256}, {"attention_tiled", 128}} {
		for _, act := range []string{"", "q8_0", "q8_1"} {
			for _, kv := range []string{"f16", "f32"} {
				name, defines, bindings := src.name+"_"+kv, []string{"KV_" + strings.ToUpper(kv)}, 5
				if act != "" {
					name, defines, bindings = name+"_"+act, append(defines, strings.ToUpper(act)), 6
				}
				variants = append(variants, variant{name, src.name + ".comp", defines, bindings, 52, src.wg})
			}
		}
	}
	// A decode step's attention that also rotates and stores the step's
	// own keys and values (rope_kv.comp's work), float caches only; with
	// Q8_K activations too (a counter buffer at binding 7).
	for _, act := range []string{"", "q8_0", "q8_1", "q8_k"} {
		for _, kv := range []string{"f16", "f32"} {
			name, defines, bindings := "attention_rkv_"+kv, []string{"KV_" + strings.ToUpper(kv), "ROPE_KV"}, 6
			if act != "" {
				name, defines, bindings = name+"_"+act, append(defines, strings.ToUpper(act)), 7
			}
			if act == "q8_k" {
				bindings = 8
			}
			variants = append(variants, variant{name, "attention.comp", defines, bindings, 72, 256})
		}
	}
	// Prefill attention on tensor cores (binary16 products, F16 cache
	// only), for heads of up to 128 and (smaller staged rows) of up to 64
	// values, and fused with the output projection's activations.
	for _, hd := range []struct{ name, define string }{{"", ""}, {"hd64_", "HD64"}} {
		for _, act := range []string{"", "q8_0", "q8_1"} {
			name, defines, bindings := "attention_coop_"+hd.name+"f16", []string{"KV_F16", "COOP"}, 5
			if hd.define != "" {
				defines = append(defines, hd.define)
			}
			if act != "" {
				name, defines, bindings = name+"_"+act, append(defines, strings.ToUpper(act)), 6
			}
			variants = append(variants, variant{name, "attention_coop.comp", defines, bindings, 52, 256})
		}
	}
	// Prefill attention on cooperative matrix 2 (attention_cm2.comp), F16
	// cache only: heads of up to 64 and of up to 128 values, AT_TQ tokens
	// a workgroup, AT_TK cache rows a step, in each of cm2AttnShapes;
	// plain and fused with the output projection's activations.
	for _, hd := range []int{64, 128} {
		for _, t := range cm2AttnShapes[hd] {
			for _, act := range []string{"", "q8_0", "q8_1"} {
				name := fmt.Sprintf("attention_cm2_hd%d%s_f16", hd, t.suffix)
				defines := []string{"KV_F16", "COOP2", fmt.Sprintf("AT_TQ=%d", t.tile.tq), fmt.Sprintf("AT_TK=%d", t.tile.tk), fmt.Sprintf("AT_D=%d", hd)}
				bindings := 5
				if act != "" {
					name, defines, bindings = name+"_"+act, append(defines, strings.ToUpper(act)), 6
				}
				variants = append(variants, variant{name, "attention_cm2.comp", defines, bindings, 52, t.tile.wg})
			}
		}
	}
	// Flash attention per KV cache type, and fused with the output
	// projection's Q8_0 or Q8_1 activations.
	for _, kv := range []struct{ name, define string }{{"f16", "KV_F16"}, {"q8_0", "KV_Q8_0"}, {"q4_0", "KV_Q4_0"}} {
		variants = append(variants,
			variant{"flash_" + kv.name, "flash_attn.comp", []string{kv.define}, 5, 52, 64},
			variant{"flash_" + kv.name + "_q8_0", "flash_attn.comp", []string{kv.define, "Q8_0"}, 6, 52, 64},
			variant{"flash_" + kv.name + "_q8_1", "flash_attn.comp", []string{kv.define, "Q8_1"}, 6, 52, 64},
		)
	}
	for _, w := range weightTypes {
		grid := 0
		if w.grid {
			grid = 1
		}
		variants = append(variants, variant{"get_rows_" + w.name, "get_rows.comp", []string{w.define}, 3 + grid, 28, 64})
		if w.rowMatmul {
			variants = append(variants,
				variant{"matmul_" + w.name, "matmul.comp", []string{w.define}, 3, 28, 64},
				variant{"matmul_add_" + w.name, "matmul.comp", []string{w.define, "ADD"}, 4, 28, 64},
				variant{"matmul_gateup_" + w.name, "matmul.comp", []string{w.define, "GATEUP"}, 4, 28, 64},
				variant{"matmul_bias_" + w.name, "matmul.comp", []string{w.define, "BIAS"}, 4, 28, 64},
				variant{"matmul_geglu_" + w.name, "matmul.comp", []string{w.define, "GEGLU"}, 4, 28, 64},
			)
		}
		if w.tiled {
			// The tiled batch matmul (64 rows × 64 tokens a workgroup).
			for _, epi := range []struct{ name, define string }{{"", ""}, {"add_", "ADD"}, {"gateup_", "GATEUP"}, {"bias_", "BIAS"}, {"geglu_", "GEGLU"}} {
				defines, bindings := []string{w.define}, 3
				if epi.define != "" {
					defines, bindings = append(defines, epi.define), 4
				}
				variants = append(variants, variant{"matmul_tiled_" + epi.name + w.name, "matmul_tiled.comp", defines, bindings, 28, 256})
				if epi.define == "GATEUP" {
					variants = append(variants, downActivations("matmul_tiled_gateup_"+w.name, w.name, defines, 256)...)
				}
				if w.coop {
					// Its block sums by tensor cores (VK_NV_cooperative_matrix).
					coop, wg := append(slices.Clone(defines), "COOP"), 256
					twoWeights := epi.define == "GATEUP" || epi.define == "GEGLU"
					if w.name == "q4_k" && twoWeights {
						// Its gate·up decodes the weights to binary16 (F16's
						// tiles and activations): binary16 tensor cores.
						coop = append(coop, "KQ_F16")
					}
					if w.name == "f16" && twoWeights {
						// F16 gate·up tiles: a subgroup per weight's
						// fragments, 512 invocations (F16_SPLIT). Q4_K's
						// (KQ_F16) were 1% slower so (its decoding staged
						// by half the invocations).
						coop, wg = append(coop, "F16_SPLIT"), 512
					}
					if epi.define == "ADD" && block32[w.name] {
						// The residual tiles of the 32-value block types
						// (FFN down, attention output): 64 rows × 128
						// tokens, the next stage's loads in flight during
						// this one's products (Q_PF). The host reads the
						// shape (Q_TR, Q_TT).
						coop = append(coop, "Q_TR=64", "Q_TT=128", "Q_SGR=2", "Q_PF")
					}
					variants = append(variants, variant{"matmul_coop_" + epi.name + w.name, "matmul_tiled.comp", coop, bindings, 28, wg})
					if epi.define == "GATEUP" {
						variants = append(variants, downActivations("matmul_coop_gateup_"+w.name, w.name, coop, wg)...)
					}
				}
			}
		}
		if w.name == "f16" {
			// Prefill tiles on cooperative matrix 2 (matmul_cm2.comp):
			// CM_TR rows × CM_TT tokens a workgroup, CM_TK columns a step.
			// No BIAS: no GPU test has run that epilogue here (biased
			// matmuls keep matmul_coop's tiles).
			for _, epi := range []struct{ name, define string }{{"", ""}, {"add_", "ADD"}, {"gateup_", "GATEUP"}} {
				tile, ok := cm2Tiles[epi.name]
				if !ok {
					tile = cm2Tiles[""]
				}
				tiles := append([]cm2Shape{{"", tile}}, cm2Others...)
				for _, t := range tiles {
					if t.suffix != "" && t.tile == tile {
						continue // the default's shape
					}
					defines, bindings := []string{w.define, "COOP2", fmt.Sprintf("CM_TR=%d", t.tile.tr), fmt.Sprintf("CM_TT=%d", t.tile.tt), fmt.Sprintf("CM_TK=%d", t.tile.tk)}, 3
					if epi.define != "" {
						defines, bindings = append(defines, epi.define), 4
					}
					variants = append(variants, variant{"matmul_cm2_" + epi.name + w.name + t.suffix, "matmul_cm2.comp", defines, bindings, 28, t.tile.wg})
				}
			}
		}
		variants = append(variants,
			variant{"matvec_" + w.name, "matvec.comp", []string{w.define}, 3 + grid, 28, 64},
			variant{"matvec_add_" + w.name, "matvec.comp", []string{w.define, "ADD"}, 4 + grid, 28, 64},
			variant{"matvec_gateup_" + w.name, "matvec.comp", []string{w.define, "GATEUP"}, 4 + grid, 28, 64},
			variant{"matvec_bias_" + w.name, "matvec.comp", []string{w.define, "BIAS"}, 4 + grid, 28, 64},
			variant{"matvec_geglu_" + w.name, "matvec.comp", []string{w.define, "GEGLU"}, 4 + grid, 28, 64},
			variant{"matvec_qkv_" + w.name, "matvec.comp", []string{w.define, "QKV"}, 3 + grid, 48, 64},
		)
		if w.name == "q8_0" || w.name == "q4_0" || w.name == "q5_0" {
			// A decode step's RMSNormMul folded into the matvecs around
			// it: the residual's matmul writes the norm's blocks
			// (NORM_OUT, the norm's weight and the counters after its
			// bindings), its readers scale them (NORM_IN).
			variants = append(variants,
				variant{"matvec_add_" + w.name + "_nq", "matvec.comp", []string{w.define, "ADD", "NORM_OUT"}, 7, 36, 64},
				variant{"matvec_nq_" + w.name, "matvec.comp", []string{w.define, "NORM_IN"}, 3, 32, 64},
				variant{"matvec_qkv_nq_" + w.name, "matvec.comp", []string{w.define, "QKV", "NORM_IN"}, 3, 52, 64},
				variant{"matvec_gateup_nq_" + w.name, "matvec.comp", []string{w.define, "GATEUP", "NORM_IN"}, 4, 32, 64},
				variant{"matvec_gateup_nq_" + w.name + "_q8_0", "matvec.comp", []string{w.define, "GATEUP", "OUT_Q8_0", "NORM_IN"}, 6, 32, 64},
			)
		}
		if w.name == "q4_k" || w.name == "q5_k" || w.name == "q6_k" {
			// The same for readers of Q8_K activations (the K-quant
			// mixes): the residual's matmul writes Q8_K super-blocks of
			// the norm's h·w (NORM_K), whatever its own weight type.
			variants = append(variants,
				variant{"matvec_add_" + w.name + "_nqk", "matvec.comp", []string{w.define, "ADD", "NORM_OUT", "NORM_K"}, 7, 36, 64},
				variant{"matvec_nq_" + w.name, "matvec.comp", []string{w.define, "NORM_IN"}, 3, 32, 64},
				variant{"matvec_qkv_nq_" + w.name, "matvec.comp", []string{w.define, "QKV", "NORM_IN"}, 3, 52, 64},
				variant{"matvec_gateup_nq_" + w.name, "matvec.comp", []string{w.define, "GATEUP", "NORM_IN"}, 4, 32, 64},
				variant{"matvec_gateup_nq_" + w.name + "_q8_k", "matvec.comp", []string{w.define, "GATEUP", "OUT_Q8_K", "NORM_IN"}, 6, 32, 64},
			)
		}
		acts := []string{"q8_0", "q8_1"} // the legacy block types' files
		if w.tiled && !w.rowMatmul {
			acts = []string{"q8_k"} // the K-quants' (and IQ4_XS's)
		}
		if w.rowMatmul && w.name != "f32" && w.name != "f16" && w.name != "bf16" || w.tiled && !w.rowMatmul {
			// A decode step's gate·up that writes the FFN down's
			// activations itself.
			for _, act := range acts {
				variants = append(variants, variant{"matvec_gateup_" + w.name + "_" + act, "matvec.comp",
					[]string{w.define, "GATEUP", "OUT_" + strings.ToUpper(act)}, 6, 28, 64})
			}
		}
	}
}

// glslcFlags: SPIR-V 1.5 for Vulkan 1.2, optimised. No debug info, so the
// output depends only on the sources and the glslc version. The
// cooperative-matrix-2 variants (cm2) take SPIR-V 1.6 for Vulkan 1.3, as
// their extensions require.
var (
	glslcFlags    = []string{"--target-env=vulkan1.2", "-O", "-Werror"}
	glslcCM2Flags = []string{"--target-env=vulkan1.3", "-O", "-Werror"}
)

func main() {
	dir := flag.String("dir", "../shaders", "the shaders directory")
	glslc := flag.String("glslc", "glslc", "the GLSL compiler")
	glslcCM2 := flag.String("glslc-cm2", "./glslc-trixie.sh", "the GLSL compiler of the cooperative-matrix-2 variants (GL_NV_cooperative_matrix2 needs glslang 15)")
	flag.Parse()
	if err := run(*dir, *glslc, *glslcCM2); err != nil {
		fmt.Fprintln(os.Stderr, "shadergen:", err)
		os.Exit(1)
	}
}

// compiler is a glslc and its first --version line.
type compiler struct{ path, version string }

// findCompiler finds glslc; hint says how to get it.
func findCompiler(glslc, hint string) (compiler, error) {
	path, err := exec.LookPath(glslc)
	if err != nil {
		return compiler{}, fmt.Errorf("%s not found: %s", glslc, hint)
	}
	cmd := exec.Command(path, "--version")
	cmd.Stderr = os.Stderr // glslc-trixie.sh's download progress and errors
	ver, err := cmd.Output()
	if err != nil {
		return compiler{}, fmt.Errorf("%s --version: %v", glslc, err)
	}
	return compiler{path, strings.TrimSpace(strings.SplitN(string(ver), "\n", 2)[0])}, nil
}

// cm2Version is the compiler of the cooperative-matrix-2 variants
// (glslc-trixie.sh pins its packages): their committed SPIR-V is its.
const cm2Version = "shaderc 2025.2-1"

func run(dir, glslc, glslcCM2 string) error {
	base, err := findCompiler(glslc, "install it (Debian/Ubuntu: apt-get install glslc) to regenerate the shaders")
	if err != nil {
		return err
	}
	// The cooperative-matrix-2 compiler is fetched from Debian on first
	// use (glslc-trixie.sh): without it (offline) those variants keep
	// their committed SPIR-V, and the run says so.
	cm2, cm2Err := findCompiler(glslcCM2, "the cooperative-matrix-2 variants need "+cm2Version+" (./glslc-trixie.sh fetches it from Debian)")
	if cm2Err != nil {
		fmt.Fprintf(os.Stderr, "shadergen: %v\nshadergen: the cooperative-matrix-2 variants keep their committed SPIR-V\n", cm2Err)
	} else if cm2.version != cm2Version {
		return fmt.Errorf("%s is %s: the cooperative-matrix-2 variants are compiled by %s (codegen/glslc-trixie.sh)", glslcCM2, cm2.version, cm2Version)
	}

	spvDir := filepath.Join(dir, "spv")
	if err := os.MkdirAll(spvDir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, v := range variants {
		out := filepath.Join(spvDir, v.name+".spv")
		keep[v.name+".spv"] = true
		c, flags := base, glslcFlags
		if v.cm2() {
			if cm2Err != nil {
				continue
			}
			c, flags = cm2, glslcCM2Flags
		}
		args := slices.Clone(flags)
		args = append(args, "-I", dir, "-o", out)
		for _, d := range v.defines {
			args = append(args, "-D"+d)
		}
		args = append(args, filepath.Join(dir, v.source))
		cmd := exec.Command(c.path, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s (%s %v): %v\n%s", v.name, v.source, v.defines, err, stderr.String())
		}
	}
	// Remove SPIR-V of variants that no longer exist.
	old, _ := filepath.Glob(filepath.Join(spvDir, "*.spv"))
	for _, f := range old {
		if !keep[filepath.Base(f)] {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return writeIndex(filepath.Join(dir, "index_gen.go"), base.version)
}

func goName(name string) string {
	var b strings.Builder
	b.WriteString("spv")
	for _, part := range strings.Split(name, "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func writeIndex(path, version string) error {
	f := jen.NewFile("shaders")
	f.HeaderComment("Code generated by shadergen (codegen/cmd/shadergen). DO NOT EDIT.")
	f.HeaderComment("")
	f.HeaderComment("Compiled by " + version + " with " + strings.Join(glslcFlags, " ") + ",")
	f.HeaderComment("the cooperative-matrix-2 variants (COOP2) by " + cm2Version + " with " + strings.Join(glslcCM2Flags, " ") + ".")
	f.Anon("embed")
	for _, v := range variants {
		f.Comment("//go:embed spv/" + v.name + ".spv")
		f.Var().Id(goName(v.name)).Index().Byte()
		f.Line()
	}
	var vals []jen.Code
	for _, v := range variants {
		d := jen.Dict{
			jen.Id("Name"):      jen.Lit(v.name),
			jen.Id("Source"):    jen.Lit(v.source),
			jen.Id("Bindings"):  jen.Lit(v.bindings),
			jen.Id("PushBytes"): jen.Lit(v.push),
			jen.Id("Workgroup"): jen.Lit(v.wg),
			jen.Id("SPIRV"):     jen.Id(goName(v.name)),
		}
		if len(v.defines) > 0 {
			var ds []jen.Code
			for _, s := range v.defines {
				ds = append(ds, jen.Lit(s))
			}
			d[jen.Id("Defines")] = jen.Index().String().Values(ds...)
		}
		vals = append(vals, jen.Values(d))
	}
	f.Comment("kernels lists every compiled variant, in the generator's order.")
	f.Var().Id("kernels").Op("=").Index().Id("Kernel").Values(vals...)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
