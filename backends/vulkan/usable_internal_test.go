//go:build linux && (amd64 || arm64)

package vulkan

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
)

// A device weft cannot use is named with the reason and what to do.
func TestUnusableSaysWhy(t *testing.T) {
	good := vk.Properties{APIVersion: vk.APIVersion(vk.MakeAPIVersion(1, 3, 280)),
		SubgroupStages: vk.StageCompute, SubgroupOperations: vk.SubgroupArithmetic}
	feats := vk.Features{IntegerDotProduct: true}
	assert.Empty(t, unusable(good, feats, true))

	old := good
	old.APIVersion = vk.APIVersion(vk.MakeAPIVersion(1, 1, 0))
	assert.Contains(t, unusable(old, feats, true), "Vulkan 1.3 is needed and the driver offers 1.1")
	v12 := good
	v12.APIVersion = vk.APIVersion(vk.MakeAPIVersion(1, 2, 198))
	assert.Contains(t, unusable(v12, vk.Features{}, true), "Vulkan 1.3 is needed and the driver offers 1.2.198")
	assert.Equal(t, "no compute queue", unusable(good, feats, false))
	noSubgroups := good
	noSubgroups.SubgroupOperations = 0
	assert.Contains(t, unusable(noSubgroups, feats, true), "subgroup arithmetic")
	why := unusable(good, vk.Features{}, true)
	assert.Contains(t, why, "shaderIntegerDotProduct")
	assert.Contains(t, why, "--backend cpu")
}
