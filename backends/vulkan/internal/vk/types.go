//go:build linux && (amd64 || arm64)

package vk

import "structs"

// Handles. Dispatchable handles are C pointers, the others 64-bit values;
// on the 64-bit platforms this package builds for both fit a uintptr.
type (
	InstanceHandle       uintptr
	PhysicalDeviceHandle uintptr
	DeviceHandle         uintptr
	Queue                uintptr
	CommandBuffer        uintptr

	DeviceMemory        uintptr
	Buffer              uintptr
	ShaderModule        uintptr
	PipelineCache       uintptr
	PipelineLayout      uintptr
	Pipeline            uintptr
	DescriptorSetLayout uintptr
	DescriptorPool      uintptr
	DescriptorSet       uintptr
	CommandPool         uintptr
	Fence               uintptr
	Semaphore           uintptr
	QueryPool           uintptr
	debugMessenger      uintptr
)

// Flags is a VkFlags bit mask.
type Flags = uint32

// Structure types.
const (
	stApplicationInfo             = 0
	stInstanceCreateInfo          = 1
	stDeviceQueueCreateInfo       = 2
	stDeviceCreateInfo            = 3
	stSubmitInfo                  = 4
	stMemoryAllocateInfo          = 5
	stMappedMemoryRange           = 6
	stFenceCreateInfo             = 8
	stSemaphoreCreateInfo         = 9
	stQueryPoolCreateInfo         = 11
	stBufferCreateInfo            = 12
	stShaderModuleCreateInfo      = 16
	stPipelineCacheCreateInfo     = 17
	stPipelineShaderStageCreate   = 18
	stComputePipelineCreateInfo   = 29
	stPipelineLayoutCreateInfo    = 30
	stDescriptorSetLayoutCreate   = 32
	stDescriptorPoolCreateInfo    = 33
	stDescriptorSetAllocateInfo   = 34
	stWriteDescriptorSet          = 35
	stCommandPoolCreateInfo       = 39
	stCommandBufferAllocateInfo   = 40
	stCommandBufferBeginInfo      = 42
	stBufferMemoryBarrier         = 44
	stMemoryBarrier               = 46
	stVulkan11Features            = 49
	stVulkan11Properties          = 50
	stVulkan12Features            = 51
	stVulkan13Features            = 53
	stVulkan13Properties          = 54
	stFeatures2                   = 1000059000
	stProperties2                 = 1000059001
	stQueueFamilyProperties2      = 1000059005
	stMemoryProperties2           = 1000059006
	stMemoryAllocateFlagsInfo     = 1000060000
	stDebugUtilsCallbackData      = 1000128003
	stDebugUtilsMessengerCreate   = 1000128004
	stDriverProperties            = 1000196000
	stSemaphoreTypeCreateInfo     = 1000207002
	stTimelineSemaphoreSubmitInfo = 1000207003
	stSemaphoreWaitInfo           = 1000207004
	stSemaphoreSignalInfo         = 1000207005
	stRequiredSubgroupSizeCreate  = 1000225001
	stMemoryBudgetProperties      = 1000237000
	stBufferDeviceAddressInfo     = 1000244001
	stCooperativeMatrixFeaturesNV = 1000249000
	stCooperativeMatrixPropsNV    = 1000249001
	stCooperativeMatrixFeaturesKH = 1000506000
	stCoopMatrix2FeaturesNV       = 1000593000
)

// Enumerations and flag bits used by the package's callers.
const (
	// VkPhysicalDeviceType
	DeviceTypeOther         = 0
	DeviceTypeIntegratedGPU = 1
	DeviceTypeDiscreteGPU   = 2
	DeviceTypeVirtualGPU    = 3
	DeviceTypeCPU           = 4

	// VkQueueFlagBits
	QueueGraphics = 0x1
	QueueCompute  = 0x2
	QueueTransfer = 0x4

	// VkMemoryPropertyFlagBits
	MemoryDeviceLocal  = 0x1
	MemoryHostVisible  = 0x2
	MemoryHostCoherent = 0x4
	MemoryHostCached   = 0x8

	// VkMemoryHeapFlagBits
	HeapDeviceLocal = 0x1

	// VkBufferUsageFlagBits
	BufferTransferSrc   = 0x1
	BufferTransferDst   = 0x2
	BufferUniform       = 0x10
	BufferStorage       = 0x20
	BufferIndirect      = 0x100
	BufferDeviceAddress = 0x20000

	// VkMemoryAllocateFlagBits
	memoryAllocateDeviceAddress = 0x2

	// VkShaderStageFlagBits
	StageCompute = 0x20

	// VkPipelineStageFlagBits
	StageTopOfPipe     = 0x1
	StageComputeShader = 0x800
	StageTransfer      = 0x1000
	StageBottomOfPipe  = 0x2000
	StageHost          = 0x4000
	StageAllCommands   = 0x10000

	// VkAccessFlagBits
	AccessIndirectCommandRead = 0x1
	AccessUniformRead         = 0x8
	AccessShaderRead          = 0x20
	AccessShaderWrite         = 0x40
	AccessTransferRead        = 0x800
	AccessTransferWrite       = 0x1000
	AccessHostRead            = 0x2000
	AccessHostWrite           = 0x4000
	AccessMemoryRead          = 0x8000
	AccessMemoryWrite         = 0x10000

	// VkDescriptorType
	DescriptorUniformBuffer = 6
	DescriptorStorageBuffer = 7

	// VkCommandBufferUsageFlagBits
	UsageOneTimeSubmit    = 0x1
	UsageSimultaneousUse  = 0x4
	commandPoolResetEach  = 0x2 // VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
	commandPoolTransient  = 0x1 // VK_COMMAND_POOL_CREATE_TRANSIENT_BIT
	fenceCreateSignaled   = 0x1
	queryTypeTimestamp    = 2
	queryResult64         = 0x1
	queryResultWait       = 0x2
	semaphoreTypeTimeline = 1

	// VkSubgroupFeatureFlagBits
	SubgroupBasic           = 0x1
	SubgroupVote            = 0x2
	SubgroupArithmetic      = 0x4
	SubgroupBallot          = 0x8
	SubgroupShuffle         = 0x10
	SubgroupShuffleRelative = 0x20
	SubgroupClustered       = 0x40
	SubgroupQuad            = 0x80

	// VkPipelineShaderStageCreateFlagBits
	StageAllowVaryingSubgroupSize = 0x1
	StageRequireFullSubgroups     = 0x2

	// VkDebugUtilsMessageSeverityFlagBitsEXT
	SeverityVerbose = 0x1
	SeverityInfo    = 0x10
	SeverityWarning = 0x100
	SeverityError   = 0x1000

	// VkDebugUtilsMessageTypeFlagBitsEXT
	MessageGeneral     = 0x1
	MessageValidation  = 0x2
	MessagePerformance = 0x4
)

// WholeSize is VK_WHOLE_SIZE.
const WholeSize = ^uint64(0)

// MakeAPIVersion is VK_MAKE_API_VERSION(0, major, minor, patch).
func MakeAPIVersion(major, minor, patch uint32) uint32 {
	return major<<22 | minor<<12 | patch
}

// APIVersion formats a packed Vulkan version as "major.minor.patch".
type APIVersion uint32

func (v APIVersion) Major() uint32 { return uint32(v) >> 22 & 0x7f }
func (v APIVersion) Minor() uint32 { return uint32(v) >> 12 & 0x3ff }
func (v APIVersion) Patch() uint32 { return uint32(v) & 0xfff }

func (v APIVersion) String() string {
	return itoa(v.Major()) + "." + itoa(v.Minor()) + "." + itoa(v.Patch())
}

func itoa(u uint32) string {
	if u == 0 {
		return "0"
	}
	var b [10]byte
	i := len(b)
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	return string(b[i:])
}

// ---- C structure mirrors (64-bit layout) ----
//
// Pointer members are uintptr: they only ever hold addresses inside a call
// arena or addresses Vulkan returned.

type applicationInfo struct {
	_                  structs.HostLayout
	sType              uint32
	pNext              uintptr
	pApplicationName   uintptr
	applicationVersion uint32
	pEngineName        uintptr
	engineVersion      uint32
	apiVersion         uint32
}

type instanceCreateInfo struct {
	_                       structs.HostLayout
	sType                   uint32
	pNext                   uintptr
	flags                   Flags
	pApplicationInfo        uintptr
	enabledLayerCount       uint32
	ppEnabledLayerNames     uintptr
	enabledExtensionCount   uint32
	ppEnabledExtensionNames uintptr
}

type layerProperties struct {
	_                     structs.HostLayout
	layerName             [256]byte
	specVersion           uint32
	implementationVersion uint32
	description           [256]byte
}

type extensionProperties struct {
	_             structs.HostLayout
	extensionName [256]byte
	specVersion   uint32
}

type debugUtilsMessengerCreateInfo struct {
	_               structs.HostLayout
	sType           uint32
	pNext           uintptr
	flags           Flags
	messageSeverity Flags
	messageType     Flags
	pfnUserCallback uintptr
	pUserData       uintptr
}

// debugUtilsCallbackData is VkDebugUtilsMessengerCallbackDataEXT; its
// pointers point into the validation layer's memory.
type debugUtilsCallbackData struct {
	_                structs.HostLayout
	sType            uint32
	pNext            uintptr
	flags            Flags
	pMessageIdName   *byte
	messageIdNumber  int32
	pMessage         *byte
	queueLabelCount  uint32
	pQueueLabels     uintptr
	cmdBufLabelCount uint32
	pCmdBufLabels    uintptr
	objectCount      uint32
	pObjects         uintptr
}

// PhysicalDeviceLimits is VkPhysicalDeviceLimits. Members a compute
// runtime does not use are kept as padding of the same size.
type PhysicalDeviceLimits struct {
	_                               structs.HostLayout
	_                               [6]uint32 // maxImageDimension1D … maxTexelBufferElements
	MaxUniformBufferRange           uint32
	MaxStorageBufferRange           uint32
	MaxPushConstantsSize            uint32
	MaxMemoryAllocationCount        uint32
	MaxSamplerAllocationCount       uint32
	BufferImageGranularity          uint64
	SparseAddressSpaceSize          uint64
	MaxBoundDescriptorSets          uint32
	_                               [2]uint32 // maxPerStageDescriptorSamplers, …UniformBuffers
	MaxPerStageDescriptorStorageBuf uint32
	_                               [3]uint32 // sampled images, storage images, input attachments
	MaxPerStageResources            uint32
	_                               [3]uint32 // maxDescriptorSetSamplers … UniformBuffersDynamic
	MaxDescriptorSetStorageBuffers  uint32
	_                               [26]uint32 // …StorageBuffersDynamic … maxFragmentCombinedOutputResources
	MaxComputeSharedMemorySize      uint32
	MaxComputeWorkGroupCount        [3]uint32
	MaxComputeWorkGroupInvocations  uint32
	MaxComputeWorkGroupSize         [3]uint32
	_                               [5]uint32 // subPixelPrecisionBits … maxDrawIndirectCount
	_                               [2]float32
	_                               [3]uint32 // maxViewports, maxViewportDimensions
	_                               [2]float32
	_                               uint32 // viewportSubPixelBits
	MinMemoryMapAlignment           uint64
	MinTexelBufferOffsetAlignment   uint64
	MinUniformBufferOffsetAlignment uint64
	MinStorageBufferOffsetAlignment uint64
	_                               [4]int32 // texel offsets
	_                               [2]float32
	_                               [4]uint32 // subPixelInterpolationOffsetBits, framebuffer sizes
	_                               [4]uint32 // framebuffer sample counts
	_                               uint32    // maxColorAttachments
	_                               [5]uint32 // sampled/storage image sample counts
	_                               uint32    // maxSampleMaskWords
	TimestampComputeAndGraphics     uint32
	TimestampPeriod                 float32
	_                               [4]uint32 // clip/cull distances, discreteQueuePriorities
	_                               [6]float32
	_                               [2]uint32 // strictLines, standardSampleLocations
	OptimalBufferCopyOffsetAlign    uint64
	OptimalBufferCopyRowPitchAlign  uint64
	NonCoherentAtomSize             uint64
}

type physicalDeviceProperties struct {
	_                 structs.HostLayout
	apiVersion        uint32
	driverVersion     uint32
	vendorID          uint32
	deviceID          uint32
	deviceType        uint32
	deviceName        [256]byte
	pipelineCacheUUID [16]byte
	limits            PhysicalDeviceLimits
	sparseProperties  [5]uint32
}

type physicalDeviceProperties2 struct {
	_          structs.HostLayout
	sType      uint32
	pNext      uintptr
	properties physicalDeviceProperties
}

type vulkan11Properties struct {
	_                                 structs.HostLayout
	sType                             uint32
	pNext                             uintptr
	deviceUUID                        [16]byte
	driverUUID                        [16]byte
	deviceLUID                        [8]byte
	deviceNodeMask                    uint32
	deviceLUIDValid                   uint32
	subgroupSize                      uint32
	subgroupSupportedStages           Flags
	subgroupSupportedOperations       Flags
	subgroupQuadOperationsInAllStages uint32
	pointClippingBehavior             uint32
	maxMultiviewViewCount             uint32
	maxMultiviewInstanceIndex         uint32
	protectedNoFault                  uint32
	maxPerSetDescriptors              uint32
	maxMemoryAllocationSize           uint64
}

type vulkan13Properties struct {
	_                            structs.HostLayout
	sType                        uint32
	pNext                        uintptr
	minSubgroupSize              uint32
	maxSubgroupSize              uint32
	maxComputeWorkgroupSubgroups uint32
	requiredSubgroupSizeStages   Flags
	_                            [6]uint32  // inline uniform blocks
	integerDotProduct            [30]uint32 // …Accelerated flags
	_                            uint64     // storageTexelBufferOffsetAlignmentBytes
	_                            uint32
	_                            uint64 // uniformTexelBufferOffsetAlignmentBytes
	_                            uint32
	maxBufferSize                uint64
}

type driverProperties struct {
	_                  structs.HostLayout
	sType              uint32
	pNext              uintptr
	driverID           uint32
	driverName         [256]byte
	driverInfo         [256]byte
	conformanceVersion [4]uint8
}

type physicalDeviceFeatures struct {
	_     structs.HostLayout
	bools [55]uint32
}

// Indices into physicalDeviceFeatures.bools.
const (
	featShaderFloat64 = 39
	featShaderInt64   = 40
	featShaderInt16   = 41
)

type physicalDeviceFeatures2 struct {
	_        structs.HostLayout
	sType    uint32
	pNext    uintptr
	features physicalDeviceFeatures
}

type vulkan11Features struct {
	_                                  structs.HostLayout
	sType                              uint32
	pNext                              uintptr
	storageBuffer16BitAccess           uint32
	uniformAndStorageBuffer16BitAccess uint32
	storagePushConstant16              uint32
	storageInputOutput16               uint32
	multiview                          uint32
	multiviewGeometryShader            uint32
	multiviewTessellationShader        uint32
	variablePointersStorageBuffer      uint32
	variablePointers                   uint32
	protectedMemory                    uint32
	samplerYcbcrConversion             uint32
	shaderDrawParameters               uint32
}

type vulkan12Features struct {
	_                                 structs.HostLayout
	sType                             uint32
	pNext                             uintptr
	samplerMirrorClampToEdge          uint32
	drawIndirectCount                 uint32
	storageBuffer8BitAccess           uint32
	uniformAndStorageBuffer8BitAccess uint32
	storagePushConstant8              uint32
	shaderBufferInt64Atomics          uint32
	shaderSharedInt64Atomics          uint32
	shaderFloat16                     uint32
	shaderInt8                        uint32
	_                                 [25]uint32 // descriptorIndexing … uniformBufferStandardLayout
	shaderSubgroupExtendedTypes       uint32
	separateDepthStencilLayouts       uint32
	hostQueryReset                    uint32
	timelineSemaphore                 uint32
	bufferDeviceAddress               uint32
	bufferDeviceAddressCaptureReplay  uint32
	bufferDeviceAddressMultiDevice    uint32
	vulkanMemoryModel                 uint32
	vulkanMemoryModelDeviceScope      uint32
	vulkanMemoryModelAvailability     uint32
	shaderOutputViewportIndex         uint32
	shaderOutputLayer                 uint32
	subgroupBroadcastDynamicId        uint32
}

type vulkan13Features struct {
	_                                  structs.HostLayout
	sType                              uint32
	pNext                              uintptr
	robustImageAccess                  uint32
	inlineUniformBlock                 uint32
	descriptorBindingInlineUniformUAB  uint32
	pipelineCreationCacheControl       uint32
	privateData                        uint32
	shaderDemoteToHelperInvocation     uint32
	shaderTerminateInvocation          uint32
	subgroupSizeControl                uint32
	computeFullSubgroups               uint32
	synchronization2                   uint32
	textureCompressionASTCHDR          uint32
	shaderZeroInitializeWorkgroupMemor uint32
	dynamicRendering                   uint32
	shaderIntegerDotProduct            uint32
	maintenance4                       uint32
}

// cooperativeMatrixFeatures is the common prefix of the KHR and NV
// cooperative-matrix feature structures (same layout).
type cooperativeMatrixFeatures struct {
	_                     structs.HostLayout
	sType                 uint32
	pNext                 uintptr
	cooperativeMatrix     uint32
	robustBufferAccessCMx uint32
}

// coopMatrix2Features is VkPhysicalDeviceCooperativeMatrix2FeaturesNV.
type coopMatrix2Features struct {
	_                structs.HostLayout
	sType            uint32
	pNext            uintptr
	workgroupScope   uint32
	flexibleDims     uint32
	reductions       uint32
	conversions      uint32
	perElementOps    uint32
	tensorAddressing uint32
	blockLoads       uint32
}

type queueFamilyProperties struct {
	_                           structs.HostLayout
	queueFlags                  Flags
	queueCount                  uint32
	timestampValidBits          uint32
	minImageTransferGranularity [3]uint32
}

// MemoryType is VkMemoryType.
type MemoryType struct {
	_             structs.HostLayout
	PropertyFlags Flags
	HeapIndex     uint32
}

// MemoryHeap is VkMemoryHeap.
type MemoryHeap struct {
	_     structs.HostLayout
	Size  uint64
	Flags Flags
}

type physicalDeviceMemoryProperties struct {
	_               structs.HostLayout
	memoryTypeCount uint32
	memoryTypes     [32]MemoryType
	memoryHeapCount uint32
	memoryHeaps     [16]MemoryHeap
}

type physicalDeviceMemoryProperties2 struct {
	_                structs.HostLayout
	sType            uint32
	pNext            uintptr
	memoryProperties physicalDeviceMemoryProperties
}

type memoryBudgetProperties struct {
	_          structs.HostLayout
	sType      uint32
	pNext      uintptr
	heapBudget [16]uint64
	heapUsage  [16]uint64
}

type deviceQueueCreateInfo struct {
	_                structs.HostLayout
	sType            uint32
	pNext            uintptr
	flags            Flags
	queueFamilyIndex uint32
	queueCount       uint32
	pQueuePriorities uintptr
}

type deviceCreateInfo struct {
	_                       structs.HostLayout
	sType                   uint32
	pNext                   uintptr
	flags                   Flags
	queueCreateInfoCount    uint32
	pQueueCreateInfos       uintptr
	enabledLayerCount       uint32
	ppEnabledLayerNames     uintptr
	enabledExtensionCount   uint32
	ppEnabledExtensionNames uintptr
	pEnabledFeatures        uintptr
}

type memoryAllocateInfo struct {
	_               structs.HostLayout
	sType           uint32
	pNext           uintptr
	allocationSize  uint64
	memoryTypeIndex uint32
}

type memoryAllocateFlagsInfo struct {
	_          structs.HostLayout
	sType      uint32
	pNext      uintptr
	flags      Flags
	deviceMask uint32
}

type mappedMemoryRange struct {
	_      structs.HostLayout
	sType  uint32
	pNext  uintptr
	memory DeviceMemory
	offset uint64
	size   uint64
}

type bufferCreateInfo struct {
	_                     structs.HostLayout
	sType                 uint32
	pNext                 uintptr
	flags                 Flags
	size                  uint64
	usage                 Flags
	sharingMode           uint32
	queueFamilyIndexCount uint32
	pQueueFamilyIndices   uintptr
}

// MemoryRequirements is VkMemoryRequirements.
type MemoryRequirements struct {
	_              structs.HostLayout
	Size           uint64
	Alignment      uint64
	MemoryTypeBits uint32
}

type bufferDeviceAddressInfo struct {
	_      structs.HostLayout
	sType  uint32
	pNext  uintptr
	buffer Buffer
}

type shaderModuleCreateInfo struct {
	_        structs.HostLayout
	sType    uint32
	pNext    uintptr
	flags    Flags
	codeSize uintptr
	pCode    uintptr
}

type pipelineCacheCreateInfo struct {
	_               structs.HostLayout
	sType           uint32
	pNext           uintptr
	flags           Flags
	initialDataSize uintptr
	pInitialData    uintptr
}

type specializationMapEntry struct {
	_          structs.HostLayout
	constantID uint32
	offset     uint32
	size       uintptr
}

type specializationInfo struct {
	_             structs.HostLayout
	mapEntryCount uint32
	pMapEntries   uintptr
	dataSize      uintptr
	pData         uintptr
}

type pipelineShaderStageCreateInfo struct {
	_                   structs.HostLayout
	sType               uint32
	pNext               uintptr
	flags               Flags
	stage               Flags
	module              ShaderModule
	pName               uintptr
	pSpecializationInfo uintptr
}

type requiredSubgroupSizeCreateInfo struct {
	_                    structs.HostLayout
	sType                uint32
	pNext                uintptr
	requiredSubgroupSize uint32
}

type computePipelineCreateInfo struct {
	_                  structs.HostLayout
	sType              uint32
	pNext              uintptr
	flags              Flags
	stage              pipelineShaderStageCreateInfo
	layout             PipelineLayout
	basePipelineHandle Pipeline
	basePipelineIndex  int32
}

type descriptorSetLayoutBinding struct {
	_                  structs.HostLayout
	binding            uint32
	descriptorType     uint32
	descriptorCount    uint32
	stageFlags         Flags
	pImmutableSamplers uintptr
}

type descriptorSetLayoutCreateInfo struct {
	_            structs.HostLayout
	sType        uint32
	pNext        uintptr
	flags        Flags
	bindingCount uint32
	pBindings    uintptr
}

type pushConstantRange struct {
	_          structs.HostLayout
	stageFlags Flags
	offset     uint32
	size       uint32
}

type pipelineLayoutCreateInfo struct {
	_                      structs.HostLayout
	sType                  uint32
	pNext                  uintptr
	flags                  Flags
	setLayoutCount         uint32
	pSetLayouts            uintptr
	pushConstantRangeCount uint32
	pPushConstantRanges    uintptr
}

type descriptorPoolSize struct {
	_               structs.HostLayout
	typ             uint32
	descriptorCount uint32
}

type descriptorPoolCreateInfo struct {
	_             structs.HostLayout
	sType         uint32
	pNext         uintptr
	flags         Flags
	maxSets       uint32
	poolSizeCount uint32
	pPoolSizes    uintptr
}

type descriptorSetAllocateInfo struct {
	_                  structs.HostLayout
	sType              uint32
	pNext              uintptr
	descriptorPool     DescriptorPool
	descriptorSetCount uint32
	pSetLayouts        uintptr
}

type descriptorBufferInfo struct {
	_      structs.HostLayout
	buffer Buffer
	offset uint64
	rng    uint64
}

type writeDescriptorSet struct {
	_                structs.HostLayout
	sType            uint32
	pNext            uintptr
	dstSet           DescriptorSet
	dstBinding       uint32
	dstArrayElement  uint32
	descriptorCount  uint32
	descriptorType   uint32
	pImageInfo       uintptr
	pBufferInfo      uintptr
	pTexelBufferView uintptr
}

type commandPoolCreateInfo struct {
	_                structs.HostLayout
	sType            uint32
	pNext            uintptr
	flags            Flags
	queueFamilyIndex uint32
}

type commandBufferAllocateInfo struct {
	_                  structs.HostLayout
	sType              uint32
	pNext              uintptr
	commandPool        CommandPool
	level              uint32
	commandBufferCount uint32
}

type commandBufferBeginInfo struct {
	_                structs.HostLayout
	sType            uint32
	pNext            uintptr
	flags            Flags
	pInheritanceInfo uintptr
}

type memoryBarrier struct {
	_             structs.HostLayout
	sType         uint32
	pNext         uintptr
	srcAccessMask Flags
	dstAccessMask Flags
}

type bufferMemoryBarrier struct {
	_                   structs.HostLayout
	sType               uint32
	pNext               uintptr
	srcAccessMask       Flags
	dstAccessMask       Flags
	srcQueueFamilyIndex uint32
	dstQueueFamilyIndex uint32
	buffer              Buffer
	offset              uint64
	size                uint64
}

// BufferCopy is VkBufferCopy.
type BufferCopy struct {
	_         structs.HostLayout
	SrcOffset uint64
	DstOffset uint64
	Size      uint64
}

type fenceCreateInfo struct {
	_     structs.HostLayout
	sType uint32
	pNext uintptr
	flags Flags
}

type semaphoreTypeCreateInfo struct {
	_             structs.HostLayout
	sType         uint32
	pNext         uintptr
	semaphoreType uint32
	initialValue  uint64
}

type semaphoreCreateInfo struct {
	_     structs.HostLayout
	sType uint32
	pNext uintptr
	flags Flags
}

type semaphoreWaitInfo struct {
	_              structs.HostLayout
	sType          uint32
	pNext          uintptr
	flags          Flags
	semaphoreCount uint32
	pSemaphores    uintptr
	pValues        uintptr
}

type semaphoreSignalInfo struct {
	_         structs.HostLayout
	sType     uint32
	pNext     uintptr
	semaphore Semaphore
	value     uint64
}

type timelineSemaphoreSubmitInfo struct {
	_                         structs.HostLayout
	sType                     uint32
	pNext                     uintptr
	waitSemaphoreValueCount   uint32
	pWaitSemaphoreValues      uintptr
	signalSemaphoreValueCount uint32
	pSignalSemaphoreValues    uintptr
}

type submitInfo struct {
	_                    structs.HostLayout
	sType                uint32
	pNext                uintptr
	waitSemaphoreCount   uint32
	pWaitSemaphores      uintptr
	pWaitDstStageMask    uintptr
	commandBufferCount   uint32
	pCommandBuffers      uintptr
	signalSemaphoreCount uint32
	pSignalSemaphores    uintptr
}

type queryPoolCreateInfo struct {
	_                  structs.HostLayout
	sType              uint32
	pNext              uintptr
	flags              Flags
	queryType          uint32
	queryCount         uint32
	pipelineStatistics Flags
}

// coopMatrixPropertiesNV is VkCooperativeMatrixPropertiesNV.
type coopMatrixPropertiesNV struct {
	_                      structs.HostLayout
	sType                  uint32
	pNext                  uintptr
	m, n, k                uint32
	aType, bType, cType, d uint32
	scope                  uint32
}
