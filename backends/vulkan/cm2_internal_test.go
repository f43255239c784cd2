//go:build linux && (amd64 || arm64)

package vulkan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
