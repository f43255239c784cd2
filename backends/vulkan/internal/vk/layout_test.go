//go:build linux && (amd64 || arm64)

package vk

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type field struct {
	name   string
	offset uintptr
}

// cLayouts holds sizeof and offsetof of the C structures in the Vulkan
// 1.3.239 headers (vulkan_core.h), printed by gcc for x86-64 (LP64; arm64
// lays them out the same). Go names follow the C member names; padding
// members are not listed.
var cLayouts = []struct {
	goType string
	size   uintptr
	fields []field
}{
	{"applicationInfo", 48, []field{{"sType", 0}, {"pNext", 8}, {"pApplicationName", 16}, {"applicationVersion", 24}, {"pEngineName", 32}, {"engineVersion", 40}, {"apiVersion", 44}}},
	{"instanceCreateInfo", 64, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"pApplicationInfo", 24}, {"enabledLayerCount", 32}, {"ppEnabledLayerNames", 40}, {"enabledExtensionCount", 48}, {"ppEnabledExtensionNames", 56}}},
	{"layerProperties", 520, []field{{"layerName", 0}, {"specVersion", 256}, {"implementationVersion", 260}, {"description", 264}}},
	{"extensionProperties", 260, []field{{"extensionName", 0}, {"specVersion", 256}}},
	{"debugUtilsMessengerCreateInfo", 48, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"messageSeverity", 20}, {"messageType", 24}, {"pfnUserCallback", 32}, {"pUserData", 40}}},
	{"debugUtilsCallbackData", 96, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"pMessageIdName", 24}, {"messageIdNumber", 32}, {"pMessage", 40}, {"queueLabelCount", 48}, {"pQueueLabels", 56}, {"cmdBufLabelCount", 64}, {"pCmdBufLabels", 72}, {"objectCount", 80}, {"pObjects", 88}}},
	{"PhysicalDeviceLimits", 504, []field{{"MaxUniformBufferRange", 24}, {"MaxStorageBufferRange", 28}, {"MaxPushConstantsSize", 32}, {"MaxMemoryAllocationCount", 36}, {"MaxSamplerAllocationCount", 40}, {"BufferImageGranularity", 48}, {"SparseAddressSpaceSize", 56}, {"MaxBoundDescriptorSets", 64}, {"MaxPerStageDescriptorStorageBuf", 76}, {"MaxPerStageResources", 92}, {"MaxDescriptorSetStorageBuffers", 108}, {"MaxComputeSharedMemorySize", 216}, {"MaxComputeWorkGroupCount", 220}, {"MaxComputeWorkGroupInvocations", 232}, {"MaxComputeWorkGroupSize", 236}, {"MinMemoryMapAlignment", 304}, {"MinTexelBufferOffsetAlignment", 312}, {"MinUniformBufferOffsetAlignment", 320}, {"MinStorageBufferOffsetAlignment", 328}, {"TimestampComputeAndGraphics", 420}, {"TimestampPeriod", 424}, {"OptimalBufferCopyOffsetAlign", 480}, {"OptimalBufferCopyRowPitchAlign", 488}, {"NonCoherentAtomSize", 496}}},
	{"physicalDeviceProperties", 824, []field{{"apiVersion", 0}, {"driverVersion", 4}, {"vendorID", 8}, {"deviceID", 12}, {"deviceType", 16}, {"deviceName", 20}, {"pipelineCacheUUID", 276}, {"limits", 296}, {"sparseProperties", 800}}},
	{"physicalDeviceProperties2", 840, []field{{"sType", 0}, {"pNext", 8}, {"properties", 16}}},
	{"vulkan11Properties", 112, []field{{"sType", 0}, {"pNext", 8}, {"deviceUUID", 16}, {"driverUUID", 32}, {"deviceLUID", 48}, {"deviceNodeMask", 56}, {"deviceLUIDValid", 60}, {"subgroupSize", 64}, {"subgroupSupportedStages", 68}, {"subgroupSupportedOperations", 72}, {"subgroupQuadOperationsInAllStages", 76}, {"pointClippingBehavior", 80}, {"maxMultiviewViewCount", 84}, {"maxMultiviewInstanceIndex", 88}, {"protectedNoFault", 92}, {"maxPerSetDescriptors", 96}, {"maxMemoryAllocationSize", 104}}},
	{"vulkan13Properties", 216, []field{{"sType", 0}, {"pNext", 8}, {"minSubgroupSize", 16}, {"maxSubgroupSize", 20}, {"maxComputeWorkgroupSubgroups", 24}, {"requiredSubgroupSizeStages", 28}, {"integerDotProduct", 56}, {"maxBufferSize", 208}}},
	{"driverProperties", 536, []field{{"sType", 0}, {"pNext", 8}, {"driverID", 16}, {"driverName", 20}, {"driverInfo", 276}, {"conformanceVersion", 532}}},
	{"physicalDeviceFeatures", 220, []field{{"bools", 0}}},
	{"physicalDeviceFeatures2", 240, []field{{"sType", 0}, {"pNext", 8}, {"features", 16}}},
	{"vulkan11Features", 64, []field{{"sType", 0}, {"pNext", 8}, {"storageBuffer16BitAccess", 16}, {"uniformAndStorageBuffer16BitAccess", 20}, {"storagePushConstant16", 24}, {"shaderDrawParameters", 60}}},
	{"vulkan12Features", 208, []field{{"sType", 0}, {"pNext", 8}, {"storageBuffer8BitAccess", 24}, {"shaderFloat16", 44}, {"shaderInt8", 48}, {"shaderSubgroupExtendedTypes", 152}, {"hostQueryReset", 160}, {"timelineSemaphore", 164}, {"bufferDeviceAddress", 168}, {"vulkanMemoryModel", 180}, {"subgroupBroadcastDynamicId", 200}}},
	{"vulkan13Features", 80, []field{{"sType", 0}, {"pNext", 8}, {"subgroupSizeControl", 44}, {"computeFullSubgroups", 48}, {"synchronization2", 52}, {"maintenance4", 72}}},
	{"cooperativeMatrixFeatures", 24, []field{{"sType", 0}, {"pNext", 8}, {"cooperativeMatrix", 16}}},
	{"coopMatrix2Features", 48, []field{{"sType", 0}, {"pNext", 8}, {"workgroupScope", 16}, {"flexibleDims", 20}, {"perElementOps", 32}, {"tensorAddressing", 36}, {"blockLoads", 40}}},
	{"queueFamilyProperties", 24, []field{{"queueFlags", 0}, {"queueCount", 4}, {"timestampValidBits", 8}, {"minImageTransferGranularity", 12}}},
	{"MemoryType", 8, []field{{"PropertyFlags", 0}, {"HeapIndex", 4}}},
	{"MemoryHeap", 16, []field{{"Size", 0}, {"Flags", 8}}},
	{"physicalDeviceMemoryProperties", 520, []field{{"memoryTypeCount", 0}, {"memoryTypes", 4}, {"memoryHeapCount", 260}, {"memoryHeaps", 264}}},
	{"physicalDeviceMemoryProperties2", 536, []field{{"sType", 0}, {"pNext", 8}, {"memoryProperties", 16}}},
	{"memoryBudgetProperties", 272, []field{{"sType", 0}, {"pNext", 8}, {"heapBudget", 16}, {"heapUsage", 144}}},
	{"deviceQueueCreateInfo", 40, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"queueFamilyIndex", 20}, {"queueCount", 24}, {"pQueuePriorities", 32}}},
	{"deviceCreateInfo", 72, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"queueCreateInfoCount", 20}, {"pQueueCreateInfos", 24}, {"enabledLayerCount", 32}, {"ppEnabledLayerNames", 40}, {"enabledExtensionCount", 48}, {"ppEnabledExtensionNames", 56}, {"pEnabledFeatures", 64}}},
	{"memoryAllocateInfo", 32, []field{{"sType", 0}, {"pNext", 8}, {"allocationSize", 16}, {"memoryTypeIndex", 24}}},
	{"memoryAllocateFlagsInfo", 24, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"deviceMask", 20}}},
	{"mappedMemoryRange", 40, []field{{"sType", 0}, {"pNext", 8}, {"memory", 16}, {"offset", 24}, {"size", 32}}},
	{"bufferCreateInfo", 56, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"size", 24}, {"usage", 32}, {"sharingMode", 36}, {"queueFamilyIndexCount", 40}, {"pQueueFamilyIndices", 48}}},
	{"MemoryRequirements", 24, []field{{"Size", 0}, {"Alignment", 8}, {"MemoryTypeBits", 16}}},
	{"bufferDeviceAddressInfo", 24, []field{{"sType", 0}, {"pNext", 8}, {"buffer", 16}}},
	{"shaderModuleCreateInfo", 40, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"codeSize", 24}, {"pCode", 32}}},
	{"pipelineCacheCreateInfo", 40, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"initialDataSize", 24}, {"pInitialData", 32}}},
	{"specializationMapEntry", 16, []field{{"constantID", 0}, {"offset", 4}, {"size", 8}}},
	{"specializationInfo", 32, []field{{"mapEntryCount", 0}, {"pMapEntries", 8}, {"dataSize", 16}, {"pData", 24}}},
	{"pipelineShaderStageCreateInfo", 48, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"stage", 20}, {"module", 24}, {"pName", 32}, {"pSpecializationInfo", 40}}},
	{"requiredSubgroupSizeCreateInfo", 24, []field{{"sType", 0}, {"pNext", 8}, {"requiredSubgroupSize", 16}}},
	{"computePipelineCreateInfo", 96, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"stage", 24}, {"layout", 72}, {"basePipelineHandle", 80}, {"basePipelineIndex", 88}}},
	{"descriptorSetLayoutBinding", 24, []field{{"binding", 0}, {"descriptorType", 4}, {"descriptorCount", 8}, {"stageFlags", 12}, {"pImmutableSamplers", 16}}},
	{"descriptorSetLayoutCreateInfo", 32, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"bindingCount", 20}, {"pBindings", 24}}},
	{"pushConstantRange", 12, []field{{"stageFlags", 0}, {"offset", 4}, {"size", 8}}},
	{"pipelineLayoutCreateInfo", 48, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"setLayoutCount", 20}, {"pSetLayouts", 24}, {"pushConstantRangeCount", 32}, {"pPushConstantRanges", 40}}},
	{"descriptorPoolSize", 8, []field{{"typ", 0}, {"descriptorCount", 4}}},
	{"descriptorPoolCreateInfo", 40, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"maxSets", 20}, {"poolSizeCount", 24}, {"pPoolSizes", 32}}},
	{"descriptorSetAllocateInfo", 40, []field{{"sType", 0}, {"pNext", 8}, {"descriptorPool", 16}, {"descriptorSetCount", 24}, {"pSetLayouts", 32}}},
	{"descriptorBufferInfo", 24, []field{{"buffer", 0}, {"offset", 8}, {"rng", 16}}},
	{"writeDescriptorSet", 64, []field{{"sType", 0}, {"pNext", 8}, {"dstSet", 16}, {"dstBinding", 24}, {"dstArrayElement", 28}, {"descriptorCount", 32}, {"descriptorType", 36}, {"pImageInfo", 40}, {"pBufferInfo", 48}, {"pTexelBufferView", 56}}},
	{"commandPoolCreateInfo", 24, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"queueFamilyIndex", 20}}},
	{"commandBufferAllocateInfo", 32, []field{{"sType", 0}, {"pNext", 8}, {"commandPool", 16}, {"level", 24}, {"commandBufferCount", 28}}},
	{"commandBufferBeginInfo", 32, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"pInheritanceInfo", 24}}},
	{"memoryBarrier", 24, []field{{"sType", 0}, {"pNext", 8}, {"srcAccessMask", 16}, {"dstAccessMask", 20}}},
	{"bufferMemoryBarrier", 56, []field{{"sType", 0}, {"pNext", 8}, {"srcAccessMask", 16}, {"dstAccessMask", 20}, {"srcQueueFamilyIndex", 24}, {"dstQueueFamilyIndex", 28}, {"buffer", 32}, {"offset", 40}, {"size", 48}}},
	{"BufferCopy", 24, []field{{"SrcOffset", 0}, {"DstOffset", 8}, {"Size", 16}}},
	{"fenceCreateInfo", 24, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}}},
	{"semaphoreTypeCreateInfo", 32, []field{{"sType", 0}, {"pNext", 8}, {"semaphoreType", 16}, {"initialValue", 24}}},
	{"semaphoreCreateInfo", 24, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}}},
	{"semaphoreWaitInfo", 40, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"semaphoreCount", 20}, {"pSemaphores", 24}, {"pValues", 32}}},
	{"semaphoreSignalInfo", 32, []field{{"sType", 0}, {"pNext", 8}, {"semaphore", 16}, {"value", 24}}},
	{"timelineSemaphoreSubmitInfo", 48, []field{{"sType", 0}, {"pNext", 8}, {"waitSemaphoreValueCount", 16}, {"pWaitSemaphoreValues", 24}, {"signalSemaphoreValueCount", 32}, {"pSignalSemaphoreValues", 40}}},
	{"submitInfo", 72, []field{{"sType", 0}, {"pNext", 8}, {"waitSemaphoreCount", 16}, {"pWaitSemaphores", 24}, {"pWaitDstStageMask", 32}, {"commandBufferCount", 40}, {"pCommandBuffers", 48}, {"signalSemaphoreCount", 56}, {"pSignalSemaphores", 64}}},
	{"queryPoolCreateInfo", 32, []field{{"sType", 0}, {"pNext", 8}, {"flags", 16}, {"queryType", 20}, {"queryCount", 24}, {"pipelineStatistics", 28}}},
	// VK_KHR_pipeline_executable_properties (laid out by hand from the
	// header's member lists, LP64: char[256] arrays, the statistic's value
	// a union of 8 bytes aligned to 8).
	{"pipelineExecutableFeatures", 24, []field{{"sType", 0}, {"pNext", 8}, {"pipelineExecutableInfo", 16}}},
	{"pipelineInfoKHR", 24, []field{{"sType", 0}, {"pNext", 8}, {"pipeline", 16}}},
	{"pipelineExecutableProperties", 536, []field{{"sType", 0}, {"pNext", 8}, {"stages", 16}, {"name", 20}, {"description", 276}, {"subgroupSize", 532}}},
	{"pipelineExecutableInfo", 32, []field{{"sType", 0}, {"pNext", 8}, {"pipeline", 16}, {"executableIndex", 24}}},
	{"pipelineExecutableStatistic", 544, []field{{"sType", 0}, {"pNext", 8}, {"name", 16}, {"description", 272}, {"format", 528}, {"value", 536}}},
}

var goTypes = map[string]reflect.Type{}

func init() {
	for _, v := range []any{
		applicationInfo{}, instanceCreateInfo{}, layerProperties{}, extensionProperties{},
		debugUtilsMessengerCreateInfo{}, debugUtilsCallbackData{}, PhysicalDeviceLimits{},
		physicalDeviceProperties{}, physicalDeviceProperties2{}, vulkan11Properties{},
		vulkan13Properties{}, driverProperties{}, physicalDeviceFeatures{}, physicalDeviceFeatures2{},
		vulkan11Features{}, vulkan12Features{}, vulkan13Features{}, cooperativeMatrixFeatures{}, coopMatrix2Features{},
		queueFamilyProperties{}, MemoryType{}, MemoryHeap{}, physicalDeviceMemoryProperties{},
		physicalDeviceMemoryProperties2{}, memoryBudgetProperties{}, deviceQueueCreateInfo{},
		deviceCreateInfo{}, memoryAllocateInfo{}, memoryAllocateFlagsInfo{}, mappedMemoryRange{},
		bufferCreateInfo{}, MemoryRequirements{}, bufferDeviceAddressInfo{}, shaderModuleCreateInfo{},
		pipelineCacheCreateInfo{}, specializationMapEntry{}, specializationInfo{},
		pipelineShaderStageCreateInfo{}, requiredSubgroupSizeCreateInfo{}, computePipelineCreateInfo{},
		descriptorSetLayoutBinding{}, descriptorSetLayoutCreateInfo{}, pushConstantRange{},
		pipelineLayoutCreateInfo{}, descriptorPoolSize{}, descriptorPoolCreateInfo{},
		descriptorSetAllocateInfo{}, descriptorBufferInfo{}, writeDescriptorSet{},
		commandPoolCreateInfo{}, commandBufferAllocateInfo{}, commandBufferBeginInfo{},
		memoryBarrier{}, bufferMemoryBarrier{}, BufferCopy{}, fenceCreateInfo{},
		semaphoreTypeCreateInfo{}, semaphoreCreateInfo{}, semaphoreWaitInfo{}, semaphoreSignalInfo{},
		timelineSemaphoreSubmitInfo{}, submitInfo{}, queryPoolCreateInfo{},
		pipelineExecutableFeatures{}, pipelineInfoKHR{}, pipelineExecutableProperties{},
		pipelineExecutableInfo{}, pipelineExecutableStatistic{},
	} {
		t := reflect.TypeOf(v)
		goTypes[t.Name()] = t
	}
}

func TestStructLayoutsMatchC(t *testing.T) {
	require.Len(t, goTypes, len(cLayouts), "every mirrored structure is checked once")
	for _, l := range cLayouts {
		typ, ok := goTypes[l.goType]
		require.True(t, ok, "no Go type %s", l.goType)
		assert.Equal(t, l.size, typ.Size(), "sizeof(%s)", l.goType)
		for _, f := range l.fields {
			sf, ok := typ.FieldByName(f.name)
			if assert.True(t, ok, "%s has no field %s", l.goType, f.name) {
				assert.Equal(t, f.offset, sf.Offset, "offsetof(%s, %s)", l.goType, f.name)
			}
		}
	}
}
