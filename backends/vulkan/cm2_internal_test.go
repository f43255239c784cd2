//go:build linux && (amd64 || arm64)

package vulkan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
	"github.com/weft-ml/weft/shaders"
)

// The cooperative-matrix-2 kernels run only on devices that offer the
// extension with every feature they use, and only there; the environment
// turns them off, and a description says why they are not used.
func TestCoopMatrix2Gating(t *testing.T) {
	t.Setenv("WEFT_VULKAN_COOPMAT", "")
	t.Setenv("WEFT_VULKAN_COOPMAT2", "")
	full := DeviceInfo{Name: "gpu", Usable: true, CoopMatrix2: true, Features: vk.Features{
		CooperativeMatrix2NV: true, ShaderFloat16: true, StorageBuffer16BitAccess: true, VulkanMemoryModel: true}}
	assert.True(t, full.CoopMatrix2F16())
	assert.Contains(t, full.String(), "f16 tensor cores by VK_NV_cooperative_matrix2")

	for what, off := range map[string]func(*DeviceInfo){
		"no extension":        func(d *DeviceInfo) { d.CoopMatrix2 = false },
		"its features":        func(d *DeviceInfo) { d.Features.CooperativeMatrix2NV = false },
		"binary16":            func(d *DeviceInfo) { d.Features.ShaderFloat16 = false },
		"Vulkan memory model": func(d *DeviceInfo) { d.Features.VulkanMemoryModel = false },
	} {
		d := full
		off(&d)
		assert.False(t, d.CoopMatrix2F16(), what)
		assert.NotContains(t, d.String(), "f16 tensor cores by", what)
	}
	d := full
	d.Features.CooperativeMatrix2NV = false
	assert.Contains(t, d.String(), "VK_NV_cooperative_matrix2 (not used: ")

	t.Setenv("WEFT_VULKAN_COOPMAT2", "0")
	assert.False(t, full.CoopMatrix2F16())
	assert.Contains(t, full.String(), "turned off by WEFT_VULKAN_COOPMAT")
	t.Setenv("WEFT_VULKAN_COOPMAT2", "")

	// Which kind of tensor cores each kernel needs.
	cm2, err := shaders.Lookup("matmul_cm2_gateup_f16")
	require.NoError(t, err)
	nv, err := shaders.Lookup("matmul_coop_gateup_f16")
	require.NoError(t, err)
	plain, err := shaders.Lookup("matmul_tiled_gateup_f16")
	require.NoError(t, err)
	assert.True(t, runsCoop(cm2, false, false, true))
	assert.False(t, runsCoop(cm2, true, true, false), "NV (1) tensor cores do not run cooperative matrix 2")
	assert.True(t, runsCoop(nv, false, true, false))
	assert.False(t, runsCoop(nv, false, false, true), "cooperative matrix 2 alone does not run the NV (1) tiles")
	assert.True(t, runsCoop(plain, false, false, false))
}

// Prefill attention takes attention_cm2.comp on cooperative-matrix-2
// devices, over an F16 cache with heads a multiple of 16 of up to 128:
// the _hd64 variants for heads of up to 64, _hd128 above; elsewhere, or
// with WEFT_VULKAN_CM2_ATTN=0, attention_coop.comp keeps it. Another
// measured shape is taken by its suffix, an unknown one falls back to
// the default.
func TestCoopMatrix2Attention(t *testing.T) {
	t.Setenv("WEFT_VULKAN_CM2_ATTN", "")
	cm2 := &Device{coop2: true}
	for hd, want := range map[int]string{64: "attention_cm2_hd64_f16", 48: "attention_cm2_hd64_f16", 80: "attention_cm2_hd128_f16", 128: "attention_cm2_hd128_f16"} {
		k, ok := cm2.cm2Attention(backends.KVF16, hd)
		require.True(t, ok, "head of %d", hd)
		assert.Equal(t, want, k.Name, "head of %d", hd)
		d, _ := k.DefineInt("AT_D")
		assert.GreaterOrEqual(t, d, hd, "%s: its largest head", k.Name)
	}
	for what, c := range map[string]struct {
		d  *Device
		kv backends.KVType
		hd int
	}{
		"head of 256":         {cm2, backends.KVF16, 256},
		"head of 72":          {cm2, backends.KVF16, 72},
		"F32 cache":           {cm2, backends.KVF32, 64},
		"Q8_0 cache":          {cm2, backends.KVQ8_0, 64},
		"NV (1) tensor cores": {&Device{coopF16: true, coopInt8: true}, backends.KVF16, 64},
	} {
		_, ok := c.d.cm2Attention(c.kv, c.hd)
		assert.False(t, ok, what)
	}
	t.Setenv("WEFT_VULKAN_CM2_ATTN", "_k64")
	k, ok := cm2.cm2Attention(backends.KVF16, 64)
	require.True(t, ok)
	assert.Equal(t, "attention_cm2_hd64_k64_f16", k.Name)
	t.Setenv("WEFT_VULKAN_CM2_ATTN", "_nonesuch")
	k, ok = cm2.cm2Attention(backends.KVF16, 64)
	require.True(t, ok)
	assert.Equal(t, "attention_cm2_hd64_f16", k.Name)
	t.Setenv("WEFT_VULKAN_CM2_ATTN", "0")
	_, ok = cm2.cm2Attention(backends.KVF16, 64)
	assert.False(t, ok)
}
