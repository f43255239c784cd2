//go:build linux && (amd64 || arm64)

package vk

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/ebitengine/purego"
)

// DeviceOptions configures CreateDevice.
type DeviceOptions struct {
	QueueFamily uint32   // from PhysicalDevice.ComputeQueueFamily
	Features    Features // enabled; each must be supported
	Extensions  []string // device extensions to enable
	// PipelineStatistics enables VK_KHR_pipeline_executable_properties
	// and its pipelineExecutableInfo feature, for PipelineStatistics.
	PipelineStatistics bool
}

// Device is a VkDevice with one queue and its device-level commands.
type Device struct {
	h        DeviceHandle
	phys     PhysicalDevice
	queue    Queue
	family   uint32
	features Features

	destroyDevice                uintptr
	getDeviceQueue               uintptr
	deviceWaitIdle               uintptr
	queueSubmit                  uintptr
	queueWaitIdle                uintptr
	allocateMemory               uintptr
	freeMemory                   uintptr
	mapMemory                    uintptr
	unmapMemory                  uintptr
	flushMappedMemoryRanges      uintptr
	invalidateMappedMemoryRanges uintptr
	createBuffer                 uintptr
	destroyBuffer                uintptr
	getBufferMemoryRequirements  uintptr
	bindBufferMemory             uintptr
	getBufferDeviceAddress       uintptr
	createShaderModule           uintptr
	destroyShaderModule          uintptr
	createPipelineCache          uintptr
	destroyPipelineCache         uintptr
	getPipelineCacheData         uintptr
	createComputePipelines       uintptr
	destroyPipeline              uintptr
	createPipelineLayout         uintptr
	destroyPipelineLayout        uintptr
	createDescriptorSetLayout    uintptr
	destroyDescriptorSetLayout   uintptr
	createDescriptorPool         uintptr
	destroyDescriptorPool        uintptr
	resetDescriptorPool          uintptr
	allocateDescriptorSets       uintptr
	updateDescriptorSets         uintptr
	createCommandPool            uintptr
	destroyCommandPool           uintptr
	resetCommandPool             uintptr
	allocateCommandBuffers       uintptr
	freeCommandBuffers           uintptr
	beginCommandBuffer           uintptr
	endCommandBuffer             uintptr
	resetCommandBuffer           uintptr
	cmdBindPipeline              uintptr
	cmdBindDescriptorSets        uintptr
	cmdPushConstants             uintptr
	cmdDispatch                  uintptr
	cmdPipelineBarrier           uintptr
	cmdCopyBuffer                uintptr
	cmdFillBuffer                uintptr
	cmdResetQueryPool            uintptr
	cmdWriteTimestamp            uintptr
	createFence                  uintptr
	destroyFence                 uintptr
	resetFences                  uintptr
	waitForFences                uintptr
	getFenceStatus               uintptr
	createSemaphore              uintptr
	destroySemaphore             uintptr
	waitSemaphores               uintptr
	signalSemaphore              uintptr
	getSemaphoreCounterValue     uintptr
	createQueryPool              uintptr
	destroyQueryPool             uintptr
	getQueryPoolResults          uintptr

	getPipelineExecutableProperties uintptr // PipelineStatistics only
	getPipelineExecutableStatistics uintptr
}

// CreateDevice creates a logical device with one queue of opts.QueueFamily.
func (p PhysicalDevice) CreateDevice(opts DeviceOptions) (*Device, error) {
	props := p.Properties()
	if props.APIVersion < APIVersion(MakeAPIVersion(1, 2, 0)) {
		return nil, fmt.Errorf("vulkan: %s supports Vulkan %s; weft needs 1.2 or newer", props.Name, props.APIVersion)
	}
	if err := checkSupported(opts.Features, p.Features()); err != nil {
		return nil, fmt.Errorf("vulkan: %s: %w", props.Name, err)
	}
	if opts.Features.CooperativeMatrixNV && !slices.Contains(opts.Extensions, "VK_NV_cooperative_matrix") {
		opts.Extensions = append(slices.Clone(opts.Extensions), "VK_NV_cooperative_matrix")
	}
	if opts.Features.CooperativeMatrix2NV {
		for _, e := range []string{ExtCooperativeMatrixKHR, ExtCooperativeMatrix2NV} {
			if !slices.Contains(opts.Extensions, e) {
				opts.Extensions = append(slices.Clone(opts.Extensions), e)
			}
		}
	}
	if opts.PipelineStatistics && !slices.Contains(opts.Extensions, ExtPipelineExecutableProperties) {
		opts.Extensions = append(slices.Clone(opts.Extensions), ExtPipelineExecutableProperties)
	}
	if len(opts.Extensions) > 0 {
		have, err := p.Extensions()
		if err != nil {
			return nil, err
		}
		for _, e := range opts.Extensions {
			if !slices.Contains(have, e) {
				return nil, fmt.Errorf("vulkan: %s lacks extension %s", props.Name, e)
			}
		}
	}
	a := getArena()
	defer putArena(a)
	prio := newIn[float32](a)
	*prio = 1
	qi := newIn[deviceQueueCreateInfo](a)
	qi.sType = stDeviceQueueCreateInfo
	qi.queueFamilyIndex = opts.QueueFamily
	qi.queueCount = 1
	qi.pQueuePriorities = ptrOf(prio)
	coopType := uint32(0)
	if opts.Features.CooperativeMatrix2NV {
		coopType = stCooperativeMatrixFeaturesKH // cooperative matrix 2's types are KHR's
	}
	chain := newFeatureChain(a, p.vulkan13(), coopType, opts.Features.CooperativeMatrixNV, opts.Features.CooperativeMatrix2NV)
	chain.write(opts.Features)
	ci := newIn[deviceCreateInfo](a)
	ci.sType = stDeviceCreateInfo
	ci.pNext = ptrOf(chain.f2)
	if opts.PipelineStatistics {
		pe := newIn[pipelineExecutableFeatures](a)
		pe.sType, pe.pNext, pe.pipelineExecutableInfo = stPipelineExecutableFeatures, ptrOf(chain.f2), 1
		ci.pNext = ptrOf(pe)
	}
	ci.queueCreateInfoCount = 1
	ci.pQueueCreateInfos = ptrOf(qi)
	ci.enabledExtensionCount = uint32(len(opts.Extensions))
	ci.ppEnabledExtensionNames = a.cstrs(opts.Extensions)
	out := newIn[DeviceHandle](a)
	if err := check("vkCreateDevice", call(p.in.createDevice, uintptr(p.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return nil, err
	}
	d := &Device{h: *out, phys: p, family: opts.QueueFamily, features: opts.Features}
	gdpa := func(name uintptr) uintptr {
		r, _, _ := purego.SyscallN(p.in.getDeviceProcAddr, uintptr(d.h), name)
		return r
	}
	err := resolve("the Vulkan device", []procEntry{
		{"vkDestroyDevice", &d.destroyDevice, false},
		{"vkGetDeviceQueue", &d.getDeviceQueue, false},
		{"vkDeviceWaitIdle", &d.deviceWaitIdle, false},
		{"vkQueueSubmit", &d.queueSubmit, false},
		{"vkQueueWaitIdle", &d.queueWaitIdle, false},
		{"vkAllocateMemory", &d.allocateMemory, false},
		{"vkFreeMemory", &d.freeMemory, false},
		{"vkMapMemory", &d.mapMemory, false},
		{"vkUnmapMemory", &d.unmapMemory, false},
		{"vkFlushMappedMemoryRanges", &d.flushMappedMemoryRanges, false},
		{"vkInvalidateMappedMemoryRanges", &d.invalidateMappedMemoryRanges, false},
		{"vkCreateBuffer", &d.createBuffer, false},
		{"vkDestroyBuffer", &d.destroyBuffer, false},
		{"vkGetBufferMemoryRequirements", &d.getBufferMemoryRequirements, false},
		{"vkBindBufferMemory", &d.bindBufferMemory, false},
		{"vkGetBufferDeviceAddress", &d.getBufferDeviceAddress, true},
		{"vkCreateShaderModule", &d.createShaderModule, false},
		{"vkDestroyShaderModule", &d.destroyShaderModule, false},
		{"vkCreatePipelineCache", &d.createPipelineCache, false},
		{"vkDestroyPipelineCache", &d.destroyPipelineCache, false},
		{"vkGetPipelineCacheData", &d.getPipelineCacheData, false},
		{"vkCreateComputePipelines", &d.createComputePipelines, false},
		{"vkDestroyPipeline", &d.destroyPipeline, false},
		{"vkCreatePipelineLayout", &d.createPipelineLayout, false},
		{"vkDestroyPipelineLayout", &d.destroyPipelineLayout, false},
		{"vkCreateDescriptorSetLayout", &d.createDescriptorSetLayout, false},
		{"vkDestroyDescriptorSetLayout", &d.destroyDescriptorSetLayout, false},
		{"vkCreateDescriptorPool", &d.createDescriptorPool, false},
		{"vkDestroyDescriptorPool", &d.destroyDescriptorPool, false},
		{"vkResetDescriptorPool", &d.resetDescriptorPool, false},
		{"vkAllocateDescriptorSets", &d.allocateDescriptorSets, false},
		{"vkUpdateDescriptorSets", &d.updateDescriptorSets, false},
		{"vkCreateCommandPool", &d.createCommandPool, false},
		{"vkDestroyCommandPool", &d.destroyCommandPool, false},
		{"vkResetCommandPool", &d.resetCommandPool, false},
		{"vkAllocateCommandBuffers", &d.allocateCommandBuffers, false},
		{"vkFreeCommandBuffers", &d.freeCommandBuffers, false},
		{"vkBeginCommandBuffer", &d.beginCommandBuffer, false},
		{"vkEndCommandBuffer", &d.endCommandBuffer, false},
		{"vkResetCommandBuffer", &d.resetCommandBuffer, false},
		{"vkCmdBindPipeline", &d.cmdBindPipeline, false},
		{"vkCmdBindDescriptorSets", &d.cmdBindDescriptorSets, false},
		{"vkCmdPushConstants", &d.cmdPushConstants, false},
		{"vkCmdDispatch", &d.cmdDispatch, false},
		{"vkCmdPipelineBarrier", &d.cmdPipelineBarrier, false},
		{"vkCmdCopyBuffer", &d.cmdCopyBuffer, false},
		{"vkCmdFillBuffer", &d.cmdFillBuffer, false},
		{"vkCmdResetQueryPool", &d.cmdResetQueryPool, false},
		{"vkCmdWriteTimestamp", &d.cmdWriteTimestamp, false},
		{"vkCreateFence", &d.createFence, false},
		{"vkDestroyFence", &d.destroyFence, false},
		{"vkResetFences", &d.resetFences, false},
		{"vkWaitForFences", &d.waitForFences, false},
		{"vkGetFenceStatus", &d.getFenceStatus, false},
		{"vkCreateSemaphore", &d.createSemaphore, false},
		{"vkDestroySemaphore", &d.destroySemaphore, false},
		{"vkWaitSemaphores", &d.waitSemaphores, true},
		{"vkSignalSemaphore", &d.signalSemaphore, true},
		{"vkGetSemaphoreCounterValue", &d.getSemaphoreCounterValue, true},
		{"vkCreateQueryPool", &d.createQueryPool, false},
		{"vkDestroyQueryPool", &d.destroyQueryPool, false},
		{"vkGetQueryPoolResults", &d.getQueryPoolResults, false},
	}, gdpa)
	if err == nil && opts.PipelineStatistics {
		err = resolve("the Vulkan device", []procEntry{
			{"vkGetPipelineExecutablePropertiesKHR", &d.getPipelineExecutableProperties, false},
			{"vkGetPipelineExecutableStatisticsKHR", &d.getPipelineExecutableStatistics, false},
		}, gdpa)
	}
	if err != nil {
		if d.destroyDevice != 0 {
			callVoid(d.destroyDevice, uintptr(d.h), 0)
		}
		return nil, err
	}
	a.reset()
	q := newIn[Queue](a)
	callVoid(d.getDeviceQueue, uintptr(d.h), uintptr(opts.QueueFamily), 0, ptrOf(q))
	d.queue = *q
	return d, nil
}

func checkSupported(want, have Features) error {
	w, h := reflectBools(want), reflectBools(have)
	for name, on := range w {
		if on && !h[name] {
			return fmt.Errorf("feature %s is not supported", name)
		}
	}
	return nil
}

// reflectBools lists Features' fields by name (a small hand-written table
// keeps reflect out of the package).
func reflectBools(f Features) map[string]bool {
	return map[string]bool{
		"shaderInt16": f.ShaderInt16, "shaderInt64": f.ShaderInt64, "shaderFloat64": f.ShaderFloat64,
		"storageBuffer16BitAccess": f.StorageBuffer16BitAccess, "uniformAndStorageBuffer16BitAccess": f.UniformAndStorageBuffer16BitAccess,
		"storagePushConstant16": f.StoragePushConstant16, "storageBuffer8BitAccess": f.StorageBuffer8BitAccess,
		"uniformAndStorageBuffer8BitAccess": f.UniformAndStorageBuffer8BitAccess, "storagePushConstant8": f.StoragePushConstant8,
		"shaderFloat16": f.ShaderFloat16, "shaderInt8": f.ShaderInt8, "shaderSubgroupExtendedTypes": f.ShaderSubgroupExtendedTypes,
		"hostQueryReset": f.HostQueryReset, "timelineSemaphore": f.TimelineSemaphore, "bufferDeviceAddress": f.BufferDeviceAddress,
		"vulkanMemoryModel": f.VulkanMemoryModel, "vulkanMemoryModelDeviceScope": f.VulkanMemoryModelDeviceScope,
		"subgroupSizeControl": f.SubgroupSizeControl, "computeFullSubgroups": f.ComputeFullSubgroups,
		"synchronization2": f.Synchronization2, "maintenance4": f.Maintenance4, "shaderIntegerDotProduct": f.IntegerDotProduct,
		"cooperativeMatrix (NV)": f.CooperativeMatrixNV, "cooperative matrix 2 (NV)": f.CooperativeMatrix2NV,
	}
}

// Handle returns the VkDevice.
func (d *Device) Handle() DeviceHandle { return d.h }

// Physical returns the device's physical device.
func (d *Device) Physical() PhysicalDevice { return d.phys }

// Queue returns the device's queue.
func (d *Device) Queue() Queue { return d.queue }

// QueueFamily returns the queue's family index.
func (d *Device) QueueFamily() uint32 { return d.family }

// Enabled returns the features the device was created with.
func (d *Device) Enabled() Features { return d.features }

// Destroy destroys the device; every object made from it must be
// destroyed first.
func (d *Device) Destroy() {
	if d == nil || d.h == 0 {
		return
	}
	callVoid(d.destroyDevice, uintptr(d.h), 0)
	d.h = 0
}

// WaitIdle waits until the device has finished all work.
func (d *Device) WaitIdle() error {
	return check("vkDeviceWaitIdle", call(d.deviceWaitIdle, uintptr(d.h)))
}

// ---- memory and buffers ----

// AllocateMemory allocates size bytes of memory type typeIndex. With
// deviceAddress, buffers bound to it may be queried for their address.
func (d *Device) AllocateMemory(size uint64, typeIndex uint32, deviceAddress bool) (DeviceMemory, error) {
	a := getArena()
	defer putArena(a)
	ai := newIn[memoryAllocateInfo](a)
	ai.sType = stMemoryAllocateInfo
	ai.allocationSize = size
	ai.memoryTypeIndex = typeIndex
	if deviceAddress {
		fi := newIn[memoryAllocateFlagsInfo](a)
		fi.sType = stMemoryAllocateFlagsInfo
		fi.flags = memoryAllocateDeviceAddress
		ai.pNext = ptrOf(fi)
	}
	out := newIn[DeviceMemory](a)
	if err := check("vkAllocateMemory", call(d.allocateMemory, uintptr(d.h), ptrOf(ai), 0, ptrOf(out))); err != nil {
		return 0, &Error{Call: "vkAllocateMemory", Code: err.(*Error).Code, Detail: fmt.Sprintf("%d bytes of memory type %d", size, typeIndex)}
	}
	return *out, nil
}

// FreeMemory frees memory (0 is ignored).
func (d *Device) FreeMemory(m DeviceMemory) {
	if m != 0 {
		callVoid(d.freeMemory, uintptr(d.h), uintptr(m), 0)
	}
}

// MapMemory maps size bytes at offset of host-visible memory and returns
// them as a byte slice over the mapping (valid until UnmapMemory).
func (d *Device) MapMemory(m DeviceMemory, offset, size uint64) ([]byte, error) {
	a := getArena()
	defer putArena(a)
	pp := newIn[unsafe.Pointer](a)
	if err := check("vkMapMemory", call(d.mapMemory, uintptr(d.h), uintptr(m), uintptr(offset), uintptr(size), 0, ptrOf(pp))); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(*pp), int(size)), nil
}

// UnmapMemory unmaps memory.
func (d *Device) UnmapMemory(m DeviceMemory) {
	callVoid(d.unmapMemory, uintptr(d.h), uintptr(m))
}

func (d *Device) memoryRanges(name string, fn uintptr, m DeviceMemory, offset, size uint64) error {
	a := getArena()
	defer putArena(a)
	r := newIn[mappedMemoryRange](a)
	r.sType = stMappedMemoryRange
	r.memory, r.offset, r.size = m, offset, size
	return check(name, call(fn, uintptr(d.h), 1, ptrOf(r)))
}

// FlushMappedMemory makes host writes to non-coherent memory visible to
// the device. offset and size must respect nonCoherentAtomSize (or size
// may be WholeSize).
func (d *Device) FlushMappedMemory(m DeviceMemory, offset, size uint64) error {
	return d.memoryRanges("vkFlushMappedMemoryRanges", d.flushMappedMemoryRanges, m, offset, size)
}

// InvalidateMappedMemory makes device writes to non-coherent memory
// visible to the host.
func (d *Device) InvalidateMappedMemory(m DeviceMemory, offset, size uint64) error {
	return d.memoryRanges("vkInvalidateMappedMemoryRanges", d.invalidateMappedMemoryRanges, m, offset, size)
}

// CreateBuffer creates an exclusive buffer.
func (d *Device) CreateBuffer(size uint64, usage Flags) (Buffer, error) {
	a := getArena()
	defer putArena(a)
	ci := newIn[bufferCreateInfo](a)
	ci.sType = stBufferCreateInfo
	ci.size = size
	ci.usage = usage
	out := newIn[Buffer](a)
	if err := check("vkCreateBuffer", call(d.createBuffer, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyBuffer destroys a buffer (0 is ignored).
func (d *Device) DestroyBuffer(b Buffer) {
	if b != 0 {
		callVoid(d.destroyBuffer, uintptr(d.h), uintptr(b), 0)
	}
}

// BufferMemoryRequirements returns a buffer's size, alignment and allowed
// memory types.
func (d *Device) BufferMemoryRequirements(b Buffer) MemoryRequirements {
	a := getArena()
	defer putArena(a)
	r := newIn[MemoryRequirements](a)
	callVoid(d.getBufferMemoryRequirements, uintptr(d.h), uintptr(b), ptrOf(r))
	return *r
}

// BindBufferMemory binds memory at offset to a buffer.
func (d *Device) BindBufferMemory(b Buffer, m DeviceMemory, offset uint64) error {
	return check("vkBindBufferMemory", call(d.bindBufferMemory, uintptr(d.h), uintptr(b), uintptr(m), uintptr(offset)))
}

// BufferDeviceAddress returns a buffer's GPU address (bufferDeviceAddress
// feature, BufferDeviceAddress usage, memory allocated with deviceAddress).
func (d *Device) BufferDeviceAddress(b Buffer) (uint64, error) {
	if d.getBufferDeviceAddress == 0 || !d.features.BufferDeviceAddress {
		return 0, missing("vkGetBufferDeviceAddress")
	}
	a := getArena()
	defer putArena(a)
	bi := newIn[bufferDeviceAddressInfo](a)
	bi.sType = stBufferDeviceAddressInfo
	bi.buffer = b
	r, _, _ := purego.SyscallN(d.getBufferDeviceAddress, uintptr(d.h), ptrOf(bi))
	return uint64(r), nil
}

// ---- shaders and pipelines ----

// CreateShaderModule creates a shader module from SPIR-V words.
func (d *Device) CreateShaderModule(spirv []byte) (ShaderModule, error) {
	if len(spirv) == 0 || len(spirv)%4 != 0 {
		return 0, fmt.Errorf("vulkan: SPIR-V code of %d bytes is not a whole number of words", len(spirv))
	}
	a := getArena()
	defer putArena(a)
	ci := newIn[shaderModuleCreateInfo](a)
	ci.sType = stShaderModuleCreateInfo
	ci.codeSize = uintptr(len(spirv))
	ci.pCode = copyIn(a, spirv)
	out := newIn[ShaderModule](a)
	if err := check("vkCreateShaderModule", call(d.createShaderModule, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyShaderModule destroys a shader module (0 is ignored).
func (d *Device) DestroyShaderModule(m ShaderModule) {
	if m != 0 {
		callVoid(d.destroyShaderModule, uintptr(d.h), uintptr(m), 0)
	}
}

// CreatePipelineCache creates a pipeline cache, seeded with data from an
// earlier GetPipelineCacheData (the driver ignores incompatible data).
func (d *Device) CreatePipelineCache(initial []byte) (PipelineCache, error) {
	a := getArena()
	defer putArena(a)
	ci := newIn[pipelineCacheCreateInfo](a)
	ci.sType = stPipelineCacheCreateInfo
	ci.initialDataSize = uintptr(len(initial))
	ci.pInitialData = copyIn(a, initial)
	out := newIn[PipelineCache](a)
	if err := check("vkCreatePipelineCache", call(d.createPipelineCache, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyPipelineCache destroys a pipeline cache (0 is ignored).
func (d *Device) DestroyPipelineCache(c PipelineCache) {
	if c != 0 {
		callVoid(d.destroyPipelineCache, uintptr(d.h), uintptr(c), 0)
	}
}

// PipelineCacheData returns the cache's contents for storing.
func (d *Device) PipelineCacheData(c PipelineCache) ([]byte, error) {
	for range 4 { // the size may grow between the two calls
		a := getArena()
		n := newIn[uintptr](a)
		if err := check("vkGetPipelineCacheData", call(d.getPipelineCacheData, uintptr(d.h), uintptr(c), ptrOf(n), 0)); err != nil {
			putArena(a)
			return nil, err
		}
		if *n == 0 {
			putArena(a)
			return nil, nil
		}
		buf := sliceIn[byte](a, int(*n))
		r := call(d.getPipelineCacheData, uintptr(d.h), uintptr(c), ptrOf(n), ptrOf(&buf[0]))
		if r == Incomplete {
			putArena(a)
			continue
		}
		if err := check("vkGetPipelineCacheData", r); err != nil {
			putArena(a)
			return nil, err
		}
		out := slices.Clone(buf[:*n])
		putArena(a)
		return out, nil
	}
	return nil, &Error{Call: "vkGetPipelineCacheData", Code: Incomplete, Detail: "cache kept growing"}
}

// DescriptorBinding is one binding of a descriptor set layout.
type DescriptorBinding struct {
	Binding uint32
	Type    uint32 // DescriptorStorageBuffer, DescriptorUniformBuffer
	Count   uint32 // array size, 1 for a plain binding
}

// CreateDescriptorSetLayout creates a layout of compute-stage bindings.
func (d *Device) CreateDescriptorSetLayout(bindings []DescriptorBinding) (DescriptorSetLayout, error) {
	a := getArena()
	defer putArena(a)
	bs := sliceIn[descriptorSetLayoutBinding](a, len(bindings))
	for i, b := range bindings {
		bs[i] = descriptorSetLayoutBinding{binding: b.Binding, descriptorType: b.Type, descriptorCount: max(b.Count, 1), stageFlags: StageCompute}
	}
	ci := newIn[descriptorSetLayoutCreateInfo](a)
	ci.sType = stDescriptorSetLayoutCreate
	ci.bindingCount = uint32(len(bs))
	if len(bs) > 0 {
		ci.pBindings = ptrOf(&bs[0])
	}
	out := newIn[DescriptorSetLayout](a)
	if err := check("vkCreateDescriptorSetLayout", call(d.createDescriptorSetLayout, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyDescriptorSetLayout destroys a layout (0 is ignored).
func (d *Device) DestroyDescriptorSetLayout(l DescriptorSetLayout) {
	if l != 0 {
		callVoid(d.destroyDescriptorSetLayout, uintptr(d.h), uintptr(l), 0)
	}
}

// CreatePipelineLayout creates a layout of descriptor sets and one
// compute-stage push-constant range of pushBytes (0 for none).
func (d *Device) CreatePipelineLayout(sets []DescriptorSetLayout, pushBytes uint32) (PipelineLayout, error) {
	a := getArena()
	defer putArena(a)
	ci := newIn[pipelineLayoutCreateInfo](a)
	ci.sType = stPipelineLayoutCreateInfo
	ci.setLayoutCount = uint32(len(sets))
	ci.pSetLayouts = copyIn(a, sets)
	if pushBytes > 0 {
		pr := newIn[pushConstantRange](a)
		*pr = pushConstantRange{stageFlags: StageCompute, size: pushBytes}
		ci.pushConstantRangeCount = 1
		ci.pPushConstantRanges = ptrOf(pr)
	}
	out := newIn[PipelineLayout](a)
	if err := check("vkCreatePipelineLayout", call(d.createPipelineLayout, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyPipelineLayout destroys a pipeline layout (0 is ignored).
func (d *Device) DestroyPipelineLayout(l PipelineLayout) {
	if l != 0 {
		callVoid(d.destroyPipelineLayout, uintptr(d.h), uintptr(l), 0)
	}
}

// Specialization is one 32-bit specialization constant.
type Specialization struct {
	ID    uint32
	Value uint32 // float constants: math.Float32bits
}

// ComputePipelineInfo describes a compute pipeline.
type ComputePipelineInfo struct {
	Module     ShaderModule
	Entry      string // "main" if empty
	Layout     PipelineLayout
	Cache      PipelineCache // 0 for none
	Specialize []Specialization
	// StageFlags: StageAllowVaryingSubgroupSize, StageRequireFullSubgroups
	// (subgroupSizeControl / computeFullSubgroups).
	StageFlags Flags
	// RequiredSubgroupSize pins the subgroup size (0: the driver's choice);
	// it must lie in [MinSubgroupSize, MaxSubgroupSize].
	RequiredSubgroupSize uint32
	// Flags are VkPipelineCreateFlags (PipelineCreateCaptureStatistics).
	Flags Flags
}

// CreateComputePipeline creates one compute pipeline.
func (d *Device) CreateComputePipeline(info ComputePipelineInfo) (Pipeline, error) {
	a := getArena()
	defer putArena(a)
	entry := info.Entry
	if entry == "" {
		entry = "main"
	}
	ci := newIn[computePipelineCreateInfo](a)
	ci.sType = stComputePipelineCreateInfo
	ci.flags = info.Flags
	ci.layout = info.Layout
	ci.basePipelineIndex = -1
	st := &ci.stage
	st.sType = stPipelineShaderStageCreate
	st.flags = info.StageFlags
	st.stage = StageCompute
	st.module = info.Module
	st.pName = a.cstr(entry)
	if info.RequiredSubgroupSize != 0 {
		rs := newIn[requiredSubgroupSizeCreateInfo](a)
		rs.sType = stRequiredSubgroupSizeCreate
		rs.requiredSubgroupSize = info.RequiredSubgroupSize
		st.pNext = ptrOf(rs)
	}
	if n := len(info.Specialize); n > 0 {
		entries := sliceIn[specializationMapEntry](a, n)
		data := sliceIn[uint32](a, n)
		for i, s := range info.Specialize {
			entries[i] = specializationMapEntry{constantID: s.ID, offset: uint32(4 * i), size: 4}
			data[i] = s.Value
		}
		si := newIn[specializationInfo](a)
		*si = specializationInfo{mapEntryCount: uint32(n), pMapEntries: ptrOf(&entries[0]), dataSize: uintptr(4 * n), pData: ptrOf(&data[0])}
		st.pSpecializationInfo = ptrOf(si)
	}
	out := newIn[Pipeline](a)
	r := call(d.createComputePipelines, uintptr(d.h), uintptr(info.Cache), 1, ptrOf(ci), 0, ptrOf(out))
	if err := check("vkCreateComputePipelines", r); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyPipeline destroys a pipeline (0 is ignored).
func (d *Device) DestroyPipeline(p Pipeline) {
	if p != 0 {
		callVoid(d.destroyPipeline, uintptr(d.h), uintptr(p), 0)
	}
}

// ---- descriptors ----

// CreateDescriptorPool creates a pool for maxSets sets holding at most
// storageBuffers storage-buffer descriptors in all.
func (d *Device) CreateDescriptorPool(maxSets, storageBuffers uint32) (DescriptorPool, error) {
	a := getArena()
	defer putArena(a)
	ps := newIn[descriptorPoolSize](a)
	*ps = descriptorPoolSize{typ: DescriptorStorageBuffer, descriptorCount: max(storageBuffers, 1)}
	ci := newIn[descriptorPoolCreateInfo](a)
	ci.sType = stDescriptorPoolCreateInfo
	ci.maxSets = maxSets
	ci.poolSizeCount = 1
	ci.pPoolSizes = ptrOf(ps)
	out := newIn[DescriptorPool](a)
	if err := check("vkCreateDescriptorPool", call(d.createDescriptorPool, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyDescriptorPool destroys a pool and its sets (0 is ignored).
func (d *Device) DestroyDescriptorPool(p DescriptorPool) {
	if p != 0 {
		callVoid(d.destroyDescriptorPool, uintptr(d.h), uintptr(p), 0)
	}
}

// ResetDescriptorPool frees every set of a pool.
func (d *Device) ResetDescriptorPool(p DescriptorPool) error {
	return check("vkResetDescriptorPool", call(d.resetDescriptorPool, uintptr(d.h), uintptr(p), 0))
}

// AllocateDescriptorSet allocates one set of layout l from pool p.
func (d *Device) AllocateDescriptorSet(p DescriptorPool, l DescriptorSetLayout) (DescriptorSet, error) {
	a := getArena()
	defer putArena(a)
	layouts := newIn[DescriptorSetLayout](a)
	*layouts = l
	ai := newIn[descriptorSetAllocateInfo](a)
	ai.sType = stDescriptorSetAllocateInfo
	ai.descriptorPool = p
	ai.descriptorSetCount = 1
	ai.pSetLayouts = ptrOf(layouts)
	out := newIn[DescriptorSet](a)
	if err := check("vkAllocateDescriptorSets", call(d.allocateDescriptorSets, uintptr(d.h), ptrOf(ai), ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// BufferBinding points binding Binding of a set at a buffer range.
type BufferBinding struct {
	Binding uint32
	Type    uint32 // DescriptorStorageBuffer unless set
	Buffer  Buffer
	Offset  uint64
	Range   uint64 // WholeSize for the rest of the buffer
}

// UpdateDescriptorSet writes buffer descriptors into set s.
func (d *Device) UpdateDescriptorSet(s DescriptorSet, bindings []BufferBinding) {
	if len(bindings) == 0 {
		return
	}
	a := getArena()
	defer putArena(a)
	infos := sliceIn[descriptorBufferInfo](a, len(bindings))
	writes := sliceIn[writeDescriptorSet](a, len(bindings))
	for i, b := range bindings {
		typ := b.Type
		if typ == 0 {
			typ = DescriptorStorageBuffer
		}
		infos[i] = descriptorBufferInfo{buffer: b.Buffer, offset: b.Offset, rng: b.Range}
		writes[i] = writeDescriptorSet{sType: stWriteDescriptorSet, dstSet: s, dstBinding: b.Binding,
			descriptorCount: 1, descriptorType: typ, pBufferInfo: ptrOf(&infos[i])}
	}
	callVoid(d.updateDescriptorSets, uintptr(d.h), uintptr(len(writes)), ptrOf(&writes[0]), 0, 0)
}

// ---- command pools and buffers ----

// CreateCommandPool creates a pool on the device's queue family whose
// buffers can be reset one by one.
func (d *Device) CreateCommandPool() (CommandPool, error) {
	a := getArena()
	defer putArena(a)
	ci := newIn[commandPoolCreateInfo](a)
	ci.sType = stCommandPoolCreateInfo
	ci.flags = commandPoolResetEach
	ci.queueFamilyIndex = d.family
	out := newIn[CommandPool](a)
	if err := check("vkCreateCommandPool", call(d.createCommandPool, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyCommandPool destroys a pool and its command buffers (0 is ignored).
func (d *Device) DestroyCommandPool(p CommandPool) {
	if p != 0 {
		callVoid(d.destroyCommandPool, uintptr(d.h), uintptr(p), 0)
	}
}

// ResetCommandPool resets every command buffer of a pool.
func (d *Device) ResetCommandPool(p CommandPool) error {
	return check("vkResetCommandPool", call(d.resetCommandPool, uintptr(d.h), uintptr(p), 0))
}

// AllocateCommandBuffer allocates one primary command buffer.
func (d *Device) AllocateCommandBuffer(p CommandPool) (CommandBuffer, error) {
	a := getArena()
	defer putArena(a)
	ai := newIn[commandBufferAllocateInfo](a)
	ai.sType = stCommandBufferAllocateInfo
	ai.commandPool = p
	ai.commandBufferCount = 1
	out := newIn[CommandBuffer](a)
	if err := check("vkAllocateCommandBuffers", call(d.allocateCommandBuffers, uintptr(d.h), ptrOf(ai), ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// FreeCommandBuffer returns a command buffer to its pool.
func (d *Device) FreeCommandBuffer(p CommandPool, cb CommandBuffer) {
	if cb == 0 {
		return
	}
	a := getArena()
	defer putArena(a)
	arr := newIn[CommandBuffer](a)
	*arr = cb
	callVoid(d.freeCommandBuffers, uintptr(d.h), uintptr(p), 1, ptrOf(arr))
}

// BeginCommandBuffer starts recording (flags: UsageOneTimeSubmit,
// UsageSimultaneousUse, or 0 for a buffer submitted again after each
// completes).
func (d *Device) BeginCommandBuffer(cb CommandBuffer, flags Flags) error {
	a := getArena()
	defer putArena(a)
	bi := newIn[commandBufferBeginInfo](a)
	bi.sType = stCommandBufferBeginInfo
	bi.flags = flags
	return check("vkBeginCommandBuffer", call(d.beginCommandBuffer, uintptr(cb), ptrOf(bi)))
}

// EndCommandBuffer finishes recording.
func (d *Device) EndCommandBuffer(cb CommandBuffer) error {
	return check("vkEndCommandBuffer", call(d.endCommandBuffer, uintptr(cb)))
}

// ResetCommandBuffer returns a command buffer to the initial state.
func (d *Device) ResetCommandBuffer(cb CommandBuffer) error {
	return check("vkResetCommandBuffer", call(d.resetCommandBuffer, uintptr(cb), 0))
}

// CmdBindPipeline binds a compute pipeline.
func (d *Device) CmdBindPipeline(cb CommandBuffer, p Pipeline) {
	callVoid(d.cmdBindPipeline, uintptr(cb), 1 /* VK_PIPELINE_BIND_POINT_COMPUTE */, uintptr(p))
}

// CmdBindDescriptorSet binds one set at set index 0..n for compute.
func (d *Device) CmdBindDescriptorSet(cb CommandBuffer, l PipelineLayout, index uint32, s DescriptorSet) {
	a := getArena()
	defer putArena(a)
	arr := newIn[DescriptorSet](a)
	*arr = s
	callVoid(d.cmdBindDescriptorSets, uintptr(cb), 1, uintptr(l), uintptr(index), 1, ptrOf(arr), 0, 0)
}

// CmdPushConstants records push-constant bytes at offset.
func (d *Device) CmdPushConstants(cb CommandBuffer, l PipelineLayout, offset uint32, data []byte) {
	if len(data) == 0 {
		return
	}
	a := getArena()
	defer putArena(a)
	callVoid(d.cmdPushConstants, uintptr(cb), uintptr(l), StageCompute, uintptr(offset), uintptr(len(data)), copyIn(a, data))
}

// CmdDispatch records a dispatch of x×y×z workgroups.
func (d *Device) CmdDispatch(cb CommandBuffer, x, y, z uint32) {
	callVoid(d.cmdDispatch, uintptr(cb), uintptr(x), uintptr(y), uintptr(z))
}

// Barrier is a global memory barrier between two pipeline stages.
type Barrier struct {
	SrcStage, DstStage   Flags
	SrcAccess, DstAccess Flags
}

// BufferBarrier is a memory barrier on one buffer range.
type BufferBarrier struct {
	SrcAccess, DstAccess Flags
	Buffer               Buffer
	Offset, Size         uint64 // Size WholeSize for the rest
}

// CmdPipelineBarrier records a barrier: one global memory barrier (if
// global is not nil) and any buffer barriers, from srcStage to dstStage.
func (d *Device) CmdPipelineBarrier(cb CommandBuffer, srcStage, dstStage Flags, global *Barrier, buffers []BufferBarrier) {
	a := getArena()
	defer putArena(a)
	var mb, bb uintptr
	var nm int
	if global != nil {
		m := newIn[memoryBarrier](a)
		*m = memoryBarrier{sType: stMemoryBarrier, srcAccessMask: global.SrcAccess, dstAccessMask: global.DstAccess}
		mb, nm = ptrOf(m), 1
	}
	if len(buffers) > 0 {
		bs := sliceIn[bufferMemoryBarrier](a, len(buffers))
		for i, b := range buffers {
			bs[i] = bufferMemoryBarrier{sType: stBufferMemoryBarrier, srcAccessMask: b.SrcAccess, dstAccessMask: b.DstAccess,
				srcQueueFamilyIndex: ^uint32(0), dstQueueFamilyIndex: ^uint32(0), buffer: b.Buffer, offset: b.Offset, size: b.Size}
		}
		bb = ptrOf(&bs[0])
	}
	callVoid(d.cmdPipelineBarrier, uintptr(cb), uintptr(srcStage), uintptr(dstStage), 0,
		uintptr(nm), mb, uintptr(len(buffers)), bb, 0, 0)
}

// CmdCopyBuffer records buffer-to-buffer copies.
func (d *Device) CmdCopyBuffer(cb CommandBuffer, src, dst Buffer, regions []BufferCopy) {
	if len(regions) == 0 {
		return
	}
	a := getArena()
	defer putArena(a)
	callVoid(d.cmdCopyBuffer, uintptr(cb), uintptr(src), uintptr(dst), uintptr(len(regions)), copyIn(a, regions))
}

// CmdFillBuffer fills size bytes (a multiple of 4, or WholeSize) at offset
// with a 32-bit word.
func (d *Device) CmdFillBuffer(cb CommandBuffer, b Buffer, offset, size uint64, word uint32) {
	callVoid(d.cmdFillBuffer, uintptr(cb), uintptr(b), uintptr(offset), uintptr(size), uintptr(word))
}

// ---- synchronisation ----

// CreateFence creates a fence, signalled or not.
func (d *Device) CreateFence(signaled bool) (Fence, error) {
	a := getArena()
	defer putArena(a)
	ci := newIn[fenceCreateInfo](a)
	ci.sType = stFenceCreateInfo
	if signaled {
		ci.flags = fenceCreateSignaled
	}
	out := newIn[Fence](a)
	if err := check("vkCreateFence", call(d.createFence, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyFence destroys a fence (0 is ignored).
func (d *Device) DestroyFence(f Fence) {
	if f != 0 {
		callVoid(d.destroyFence, uintptr(d.h), uintptr(f), 0)
	}
}

// ResetFence returns a fence to unsignalled.
func (d *Device) ResetFence(f Fence) error {
	a := getArena()
	defer putArena(a)
	arr := newIn[Fence](a)
	*arr = f
	return check("vkResetFences", call(d.resetFences, uintptr(d.h), 1, ptrOf(arr)))
}

// WaitFence waits up to timeout nanoseconds for a fence; it returns
// (false, nil) on timeout.
func (d *Device) WaitFence(f Fence, timeout uint64) (bool, error) {
	a := getArena()
	defer putArena(a)
	arr := newIn[Fence](a)
	*arr = f
	r := call(d.waitForFences, uintptr(d.h), 1, ptrOf(arr), 1, uintptr(timeout))
	if r == Timeout {
		return false, nil
	}
	return r == Success, check("vkWaitForFences", r)
}

// FenceSignaled reports whether a fence is signalled.
func (d *Device) FenceSignaled(f Fence) (bool, error) {
	r := call(d.getFenceStatus, uintptr(d.h), uintptr(f))
	if r == NotReady {
		return false, nil
	}
	return r == Success, check("vkGetFenceStatus", r)
}

// CreateTimelineSemaphore creates a timeline semaphore (timelineSemaphore
// feature) with an initial value.
func (d *Device) CreateTimelineSemaphore(initial uint64) (Semaphore, error) {
	if !d.features.TimelineSemaphore {
		return 0, &Error{Call: "vkCreateSemaphore", Code: ErrorFeatureNotPresent, Detail: "timelineSemaphore not enabled"}
	}
	a := getArena()
	defer putArena(a)
	ti := newIn[semaphoreTypeCreateInfo](a)
	ti.sType = stSemaphoreTypeCreateInfo
	ti.semaphoreType = semaphoreTypeTimeline
	ti.initialValue = initial
	ci := newIn[semaphoreCreateInfo](a)
	ci.sType = stSemaphoreCreateInfo
	ci.pNext = ptrOf(ti)
	out := newIn[Semaphore](a)
	if err := check("vkCreateSemaphore", call(d.createSemaphore, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroySemaphore destroys a semaphore (0 is ignored).
func (d *Device) DestroySemaphore(s Semaphore) {
	if s != 0 {
		callVoid(d.destroySemaphore, uintptr(d.h), uintptr(s), 0)
	}
}

// WaitSemaphore waits up to timeout nanoseconds until a timeline reaches
// value; (false, nil) on timeout.
func (d *Device) WaitSemaphore(s Semaphore, value, timeout uint64) (bool, error) {
	if d.waitSemaphores == 0 {
		return false, missing("vkWaitSemaphores")
	}
	a := getArena()
	defer putArena(a)
	sem, val := newIn[Semaphore](a), newIn[uint64](a)
	*sem, *val = s, value
	wi := newIn[semaphoreWaitInfo](a)
	wi.sType = stSemaphoreWaitInfo
	wi.semaphoreCount = 1
	wi.pSemaphores, wi.pValues = ptrOf(sem), ptrOf(val)
	r := call(d.waitSemaphores, uintptr(d.h), ptrOf(wi), uintptr(timeout))
	if r == Timeout {
		return false, nil
	}
	return r == Success, check("vkWaitSemaphores", r)
}

// SignalSemaphore sets a timeline semaphore's value from the host.
func (d *Device) SignalSemaphore(s Semaphore, value uint64) error {
	if d.signalSemaphore == 0 {
		return missing("vkSignalSemaphore")
	}
	a := getArena()
	defer putArena(a)
	si := newIn[semaphoreSignalInfo](a)
	si.sType = stSemaphoreSignalInfo
	si.semaphore, si.value = s, value
	return check("vkSignalSemaphore", call(d.signalSemaphore, uintptr(d.h), ptrOf(si)))
}

// SemaphoreValue reads a timeline semaphore's current value.
func (d *Device) SemaphoreValue(s Semaphore) (uint64, error) {
	if d.getSemaphoreCounterValue == 0 {
		return 0, missing("vkGetSemaphoreCounterValue")
	}
	a := getArena()
	defer putArena(a)
	v := newIn[uint64](a)
	if err := check("vkGetSemaphoreCounterValue", call(d.getSemaphoreCounterValue, uintptr(d.h), uintptr(s), ptrOf(v))); err != nil {
		return 0, err
	}
	return *v, nil
}

// TimelineOp is a timeline semaphore and a value to wait for or signal.
type TimelineOp struct {
	Semaphore Semaphore
	Value     uint64
}

// Submission is one batch for Submit.
type Submission struct {
	CommandBuffers []CommandBuffer
	Wait           []TimelineOp // waited for at the compute stage
	Signal         []TimelineOp
}

// Submit submits one batch to the device's queue, signalling fence (0 for
// none) when it completes.
func (d *Device) Submit(s Submission, fence Fence) error {
	a := getArena()
	defer putArena(a)
	si := newIn[submitInfo](a)
	si.sType = stSubmitInfo
	si.commandBufferCount = uint32(len(s.CommandBuffers))
	si.pCommandBuffers = copyIn(a, s.CommandBuffers)
	if len(s.Wait)+len(s.Signal) > 0 {
		ti := newIn[timelineSemaphoreSubmitInfo](a)
		ti.sType = stTimelineSemaphoreSubmitInfo
		if n := len(s.Wait); n > 0 {
			sems, vals, stages := sliceIn[Semaphore](a, n), sliceIn[uint64](a, n), sliceIn[Flags](a, n)
			for i, w := range s.Wait {
				sems[i], vals[i], stages[i] = w.Semaphore, w.Value, StageComputeShader|StageTransfer
			}
			si.waitSemaphoreCount = uint32(n)
			si.pWaitSemaphores, si.pWaitDstStageMask = ptrOf(&sems[0]), ptrOf(&stages[0])
			ti.waitSemaphoreValueCount, ti.pWaitSemaphoreValues = uint32(n), ptrOf(&vals[0])
		}
		if n := len(s.Signal); n > 0 {
			sems, vals := sliceIn[Semaphore](a, n), sliceIn[uint64](a, n)
			for i, w := range s.Signal {
				sems[i], vals[i] = w.Semaphore, w.Value
			}
			si.signalSemaphoreCount = uint32(n)
			si.pSignalSemaphores = ptrOf(&sems[0])
			ti.signalSemaphoreValueCount, ti.pSignalSemaphoreValues = uint32(n), ptrOf(&vals[0])
		}
		si.pNext = ptrOf(ti)
	}
	return check("vkQueueSubmit", call(d.queueSubmit, uintptr(d.queue), 1, ptrOf(si), uintptr(fence)))
}

// QueueWaitIdle waits until the queue is idle.
func (d *Device) QueueWaitIdle() error {
	return check("vkQueueWaitIdle", call(d.queueWaitIdle, uintptr(d.queue)))
}

// ---- timestamp queries ----

// CreateTimestampQueryPool creates a pool of n timestamp queries.
func (d *Device) CreateTimestampQueryPool(n uint32) (QueryPool, error) {
	a := getArena()
	defer putArena(a)
	ci := newIn[queryPoolCreateInfo](a)
	ci.sType = stQueryPoolCreateInfo
	ci.queryType = queryTypeTimestamp
	ci.queryCount = n
	out := newIn[QueryPool](a)
	if err := check("vkCreateQueryPool", call(d.createQueryPool, uintptr(d.h), ptrOf(ci), 0, ptrOf(out))); err != nil {
		return 0, err
	}
	return *out, nil
}

// DestroyQueryPool destroys a query pool (0 is ignored).
func (d *Device) DestroyQueryPool(q QueryPool) {
	if q != 0 {
		callVoid(d.destroyQueryPool, uintptr(d.h), uintptr(q), 0)
	}
}

// CmdResetQueryPool records a reset of queries [first, first+n).
func (d *Device) CmdResetQueryPool(cb CommandBuffer, q QueryPool, first, n uint32) {
	callVoid(d.cmdResetQueryPool, uintptr(cb), uintptr(q), uintptr(first), uintptr(n))
}

// CmdWriteTimestamp records a timestamp write after stage completes.
func (d *Device) CmdWriteTimestamp(cb CommandBuffer, stage Flags, q QueryPool, index uint32) {
	callVoid(d.cmdWriteTimestamp, uintptr(cb), uintptr(stage), uintptr(q), uintptr(index))
}

// TimestampResults waits for and returns queries [first, first+n) as raw
// ticks (multiply by Limits.TimestampPeriod for nanoseconds).
func (d *Device) TimestampResults(q QueryPool, first, n uint32) ([]uint64, error) {
	if n == 0 {
		return nil, nil
	}
	a := getArena()
	defer putArena(a)
	vals := sliceIn[uint64](a, int(n))
	r := call(d.getQueryPoolResults, uintptr(d.h), uintptr(q), uintptr(first), uintptr(n),
		uintptr(8*n), ptrOf(&vals[0]), 8, queryResult64|queryResultWait)
	if err := check("vkGetQueryPoolResults", r); err != nil {
		return nil, err
	}
	return slices.Clone(vals), nil
}
