//go:build linux && (amd64 || arm64)

package vk

import (
	"fmt"
	"slices"
)

// PhysicalDevice is one device the instance enumerates.
type PhysicalDevice struct {
	in *Instance
	h  PhysicalDeviceHandle
}

// Handle returns the VkPhysicalDevice.
func (p PhysicalDevice) Handle() PhysicalDeviceHandle { return p.h }

// PhysicalDevices lists the devices in the loader's order.
func (in *Instance) PhysicalDevices() ([]PhysicalDevice, error) {
	a := getArena()
	defer putArena(a)
	n := newIn[uint32](a)
	if err := check("vkEnumeratePhysicalDevices", call(in.enumeratePhysicalDevices, uintptr(in.h), ptrOf(n), 0)); err != nil {
		return nil, err
	}
	if *n == 0 {
		return nil, nil
	}
	hs := sliceIn[PhysicalDeviceHandle](a, int(*n))
	r := call(in.enumeratePhysicalDevices, uintptr(in.h), ptrOf(n), ptrOf(&hs[0]))
	if r != Incomplete {
		if err := check("vkEnumeratePhysicalDevices", r); err != nil {
			return nil, err
		}
	}
	out := make([]PhysicalDevice, *n)
	for i := range out {
		out[i] = PhysicalDevice{in: in, h: hs[i]}
	}
	return out, nil
}

// Properties is what a compute runtime wants to know about a device.
type Properties struct {
	Name          string
	Type          uint32 // DeviceTypeDiscreteGPU, DeviceTypeCPU, …
	APIVersion    APIVersion
	DriverVersion uint32
	VendorID      uint32
	DeviceID      uint32
	DriverID      uint32
	DriverName    string
	DriverInfo    string
	CacheUUID     [16]byte // pipeline-cache compatibility key
	Limits        PhysicalDeviceLimits

	// Subgroups (Vulkan 1.1 properties, 1.3 size control).
	SubgroupSize                 uint32 // the default size
	SubgroupStages               Flags
	SubgroupOperations           Flags  // SubgroupBasic, SubgroupArithmetic, …
	MinSubgroupSize              uint32 // 0 below Vulkan 1.3
	MaxSubgroupSize              uint32
	MaxComputeWorkgroupSubgroups uint32
	RequiredSubgroupSizeStages   Flags

	MaxMemoryAllocationSize uint64
	MaxBufferSize           uint64 // 0 below Vulkan 1.3 (maintenance4)
}

// TypeName names a VkPhysicalDeviceType.
func TypeName(t uint32) string {
	switch t {
	case DeviceTypeIntegratedGPU:
		return "integrated GPU"
	case DeviceTypeDiscreteGPU:
		return "discrete GPU"
	case DeviceTypeVirtualGPU:
		return "virtual GPU"
	case DeviceTypeCPU:
		return "CPU"
	}
	return "other"
}

// Properties queries the device's properties through the 1.1–1.3 chain.
func (p PhysicalDevice) Properties() Properties {
	a := getArena()
	defer putArena(a)
	// The core properties first: the chain depends on the device version.
	p2 := newIn[physicalDeviceProperties2](a)
	p2.sType = stProperties2
	callVoid(p.in.getPhysicalDeviceProperties2, uintptr(p.h), ptrOf(p2))
	devAPI := p2.properties.apiVersion

	v11 := newIn[vulkan11Properties](a)
	v11.sType = stVulkan11Properties
	drv := newIn[driverProperties](a)
	drv.sType = stDriverProperties
	v11.pNext = ptrOf(drv)
	var v13 *vulkan13Properties
	if devAPI >= MakeAPIVersion(1, 3, 0) && p.in.apiVersion >= MakeAPIVersion(1, 3, 0) {
		v13 = newIn[vulkan13Properties](a)
		v13.sType = stVulkan13Properties
		drv.pNext = ptrOf(v13)
	}
	if devAPI >= MakeAPIVersion(1, 2, 0) {
		p2.pNext = ptrOf(v11)
		callVoid(p.in.getPhysicalDeviceProperties2, uintptr(p.h), ptrOf(p2))
	}
	pp := &p2.properties
	out := Properties{
		Name:                    goString(pp.deviceName[:]),
		Type:                    pp.deviceType,
		APIVersion:              APIVersion(pp.apiVersion),
		DriverVersion:           pp.driverVersion,
		VendorID:                pp.vendorID,
		DeviceID:                pp.deviceID,
		CacheUUID:               pp.pipelineCacheUUID,
		Limits:                  pp.limits,
		DriverID:                drv.driverID,
		DriverName:              goString(drv.driverName[:]),
		DriverInfo:              goString(drv.driverInfo[:]),
		SubgroupSize:            v11.subgroupSize,
		SubgroupStages:          v11.subgroupSupportedStages,
		SubgroupOperations:      v11.subgroupSupportedOperations,
		MaxMemoryAllocationSize: v11.maxMemoryAllocationSize,
	}
	if v13 != nil {
		out.MinSubgroupSize = v13.minSubgroupSize
		out.MaxSubgroupSize = v13.maxSubgroupSize
		out.MaxComputeWorkgroupSubgroups = v13.maxComputeWorkgroupSubgroups
		out.RequiredSubgroupSizeStages = v13.requiredSubgroupSizeStages
		out.MaxBufferSize = v13.maxBufferSize
	}
	return out
}

// Features are the optional capabilities a compute runtime may use. The
// same type says what a device supports (PhysicalDevice.Features) and what
// to enable (DeviceOptions.Features).
type Features struct {
	ShaderInt16, ShaderInt64, ShaderFloat64 bool

	StorageBuffer16BitAccess           bool // 1.1
	UniformAndStorageBuffer16BitAccess bool
	StoragePushConstant16              bool

	StorageBuffer8BitAccess           bool // 1.2
	UniformAndStorageBuffer8BitAccess bool
	StoragePushConstant8              bool
	ShaderFloat16                     bool
	ShaderInt8                        bool
	ShaderSubgroupExtendedTypes       bool
	HostQueryReset                    bool
	TimelineSemaphore                 bool
	BufferDeviceAddress               bool
	VulkanMemoryModel                 bool
	VulkanMemoryModelDeviceScope      bool

	SubgroupSizeControl  bool // 1.3
	ComputeFullSubgroups bool
	Synchronization2     bool
	Maintenance4         bool
	IntegerDotProduct    bool

	// CooperativeMatrix is the KHR (or, failing that, NV) cooperative
	// matrix feature, as reported.
	CooperativeMatrix bool
	// CooperativeMatrixNV is VK_NV_cooperative_matrix's feature (the
	// shaders' GL_NV_cooperative_matrix): enabling it enables the
	// extension too.
	CooperativeMatrixNV bool
	// CooperativeMatrix2NV is VK_NV_cooperative_matrix2's workgroup-scope
	// matrices, flexible dimensions, per-element operations and tensor
	// addressing (the shaders' GL_NV_cooperative_matrix2), with
	// VK_KHR_cooperative_matrix's feature (its matrix types): enabling it
	// enables both extensions.
	CooperativeMatrix2NV bool
}

func b32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// featureChain is a Features2 chain in an arena.
type featureChain struct {
	f2  *physicalDeviceFeatures2
	v11 *vulkan11Features
	v12 *vulkan12Features
	v13 *vulkan13Features
	cm  *cooperativeMatrixFeatures
	nv  *cooperativeMatrixFeatures // VK_NV_cooperative_matrix's
	cm2 *coopMatrix2Features
}

// newFeatureChain chains the 1.1 and 1.2 features, the 1.3 ones if v13ok,
// a cooperative matrix feature structure of sType coopType (0: none), the
// NV one if nv, and VK_NV_cooperative_matrix2's if cm2.
func newFeatureChain(a *arena, v13ok bool, coopType uint32, nv, cm2 bool) featureChain {
	c := featureChain{
		f2:  newIn[physicalDeviceFeatures2](a),
		v11: newIn[vulkan11Features](a),
		v12: newIn[vulkan12Features](a),
	}
	c.f2.sType, c.v11.sType, c.v12.sType = stFeatures2, stVulkan11Features, stVulkan12Features
	c.f2.pNext, c.v11.pNext = ptrOf(c.v11), ptrOf(c.v12)
	last := &c.v12.pNext
	if v13ok {
		c.v13 = newIn[vulkan13Features](a)
		c.v13.sType = stVulkan13Features
		*last = ptrOf(c.v13)
		last = &c.v13.pNext
	}
	if coopType != 0 && coopType != stCooperativeMatrixFeaturesNV {
		c.cm = newIn[cooperativeMatrixFeatures](a)
		c.cm.sType = coopType
		*last = ptrOf(c.cm)
		last = &c.cm.pNext
	}
	if nv || coopType == stCooperativeMatrixFeaturesNV {
		c.nv = newIn[cooperativeMatrixFeatures](a)
		c.nv.sType = stCooperativeMatrixFeaturesNV
		*last = ptrOf(c.nv)
		last = &c.nv.pNext
	}
	if cm2 {
		c.cm2 = newIn[coopMatrix2Features](a)
		c.cm2.sType = stCoopMatrix2FeaturesNV
		*last = ptrOf(c.cm2)
	}
	return c
}

func (c featureChain) read() Features {
	f := &c.f2.features.bools
	out := Features{
		ShaderInt16:                        f[featShaderInt16] != 0,
		ShaderInt64:                        f[featShaderInt64] != 0,
		ShaderFloat64:                      f[featShaderFloat64] != 0,
		StorageBuffer16BitAccess:           c.v11.storageBuffer16BitAccess != 0,
		UniformAndStorageBuffer16BitAccess: c.v11.uniformAndStorageBuffer16BitAccess != 0,
		StoragePushConstant16:              c.v11.storagePushConstant16 != 0,
		StorageBuffer8BitAccess:            c.v12.storageBuffer8BitAccess != 0,
		UniformAndStorageBuffer8BitAccess:  c.v12.uniformAndStorageBuffer8BitAccess != 0,
		StoragePushConstant8:               c.v12.storagePushConstant8 != 0,
		ShaderFloat16:                      c.v12.shaderFloat16 != 0,
		ShaderInt8:                         c.v12.shaderInt8 != 0,
		ShaderSubgroupExtendedTypes:        c.v12.shaderSubgroupExtendedTypes != 0,
		HostQueryReset:                     c.v12.hostQueryReset != 0,
		TimelineSemaphore:                  c.v12.timelineSemaphore != 0,
		BufferDeviceAddress:                c.v12.bufferDeviceAddress != 0,
		VulkanMemoryModel:                  c.v12.vulkanMemoryModel != 0,
		VulkanMemoryModelDeviceScope:       c.v12.vulkanMemoryModelDeviceScope != 0,
	}
	if c.v13 != nil {
		out.SubgroupSizeControl = c.v13.subgroupSizeControl != 0
		out.ComputeFullSubgroups = c.v13.computeFullSubgroups != 0
		out.Synchronization2 = c.v13.synchronization2 != 0
		out.Maintenance4 = c.v13.maintenance4 != 0
		out.IntegerDotProduct = c.v13.shaderIntegerDotProduct != 0
	}
	if c.cm != nil {
		out.CooperativeMatrix = c.cm.cooperativeMatrix != 0
	}
	if c.nv != nil {
		out.CooperativeMatrixNV = c.nv.cooperativeMatrix != 0
		out.CooperativeMatrix = out.CooperativeMatrix || out.CooperativeMatrixNV
	}
	if c.cm2 != nil && c.cm != nil && c.cm.sType == stCooperativeMatrixFeaturesKH && c.v13 != nil { // its kernels are SPIR-V for Vulkan 1.3
		m := c.cm2
		out.CooperativeMatrix2NV = c.cm.cooperativeMatrix != 0 && m.workgroupScope != 0 && m.flexibleDims != 0 && m.perElementOps != 0 && m.tensorAddressing != 0
	}
	return out
}

// write sets the chain to enable f (of the cooperative matrix features,
// the NV one, and the KHR one with cooperative matrix 2's).
func (c featureChain) write(f Features) {
	b := &c.f2.features.bools
	b[featShaderInt16], b[featShaderInt64], b[featShaderFloat64] = b32(f.ShaderInt16), b32(f.ShaderInt64), b32(f.ShaderFloat64)
	c.v11.storageBuffer16BitAccess = b32(f.StorageBuffer16BitAccess)
	c.v11.uniformAndStorageBuffer16BitAccess = b32(f.UniformAndStorageBuffer16BitAccess)
	c.v11.storagePushConstant16 = b32(f.StoragePushConstant16)
	c.v12.storageBuffer8BitAccess = b32(f.StorageBuffer8BitAccess)
	c.v12.uniformAndStorageBuffer8BitAccess = b32(f.UniformAndStorageBuffer8BitAccess)
	c.v12.storagePushConstant8 = b32(f.StoragePushConstant8)
	c.v12.shaderFloat16 = b32(f.ShaderFloat16)
	c.v12.shaderInt8 = b32(f.ShaderInt8)
	c.v12.shaderSubgroupExtendedTypes = b32(f.ShaderSubgroupExtendedTypes)
	c.v12.hostQueryReset = b32(f.HostQueryReset)
	c.v12.timelineSemaphore = b32(f.TimelineSemaphore)
	c.v12.bufferDeviceAddress = b32(f.BufferDeviceAddress)
	c.v12.vulkanMemoryModel = b32(f.VulkanMemoryModel)
	c.v12.vulkanMemoryModelDeviceScope = b32(f.VulkanMemoryModelDeviceScope)
	if c.v13 != nil {
		c.v13.subgroupSizeControl = b32(f.SubgroupSizeControl)
		c.v13.computeFullSubgroups = b32(f.ComputeFullSubgroups)
		c.v13.synchronization2 = b32(f.Synchronization2)
		c.v13.maintenance4 = b32(f.Maintenance4)
		c.v13.shaderIntegerDotProduct = b32(f.IntegerDotProduct)
	}
	if c.nv != nil {
		c.nv.cooperativeMatrix = b32(f.CooperativeMatrixNV)
	}
	if c.cm2 != nil && c.cm != nil {
		on := b32(f.CooperativeMatrix2NV)
		c.cm.cooperativeMatrix = on
		c.cm2.workgroupScope, c.cm2.flexibleDims, c.cm2.perElementOps, c.cm2.tensorAddressing = on, on, on, on
	}
}

// vulkan13 reports whether both the instance and the device speak 1.3, so
// that the 1.3 structures may be chained.
func (p PhysicalDevice) vulkan13() bool {
	a := getArena()
	defer putArena(a)
	p2 := newIn[physicalDeviceProperties2](a)
	p2.sType = stProperties2
	callVoid(p.in.getPhysicalDeviceProperties2, uintptr(p.h), ptrOf(p2))
	return p2.properties.apiVersion >= MakeAPIVersion(1, 3, 0) && p.in.apiVersion >= MakeAPIVersion(1, 3, 0)
}

func (p PhysicalDevice) coopMatrixType() uint32 {
	exts, err := p.Extensions()
	switch {
	case err != nil:
		return 0
	case slices.Contains(exts, "VK_KHR_cooperative_matrix"):
		return stCooperativeMatrixFeaturesKH
	case slices.Contains(exts, "VK_NV_cooperative_matrix"):
		return stCooperativeMatrixFeaturesNV
	}
	return 0
}

// Features queries what the device supports. A device below Vulkan 1.2
// reports nothing.
func (p PhysicalDevice) Features() Features {
	if p.Properties().APIVersion < APIVersion(MakeAPIVersion(1, 2, 0)) {
		return Features{}
	}
	v13, coop := p.vulkan13(), p.coopMatrixType()
	exts, _ := p.Extensions()
	a := getArena()
	defer putArena(a)
	c := newFeatureChain(a, v13, coop, slices.Contains(exts, "VK_NV_cooperative_matrix"), slices.Contains(exts, ExtCooperativeMatrix2NV))
	callVoid(p.in.getPhysicalDeviceFeatures2, uintptr(p.h), ptrOf(c.f2))
	return c.read()
}

// Extensions lists the device extensions.
func (p PhysicalDevice) Extensions() ([]string, error) {
	a := getArena()
	defer putArena(a)
	n := newIn[uint32](a)
	fn := p.in.enumerateDeviceExtensionProperties
	if err := check("vkEnumerateDeviceExtensionProperties", call(fn, uintptr(p.h), 0, ptrOf(n), 0)); err != nil {
		return nil, err
	}
	props := sliceIn[extensionProperties](a, int(*n))
	if len(props) == 0 {
		return nil, nil
	}
	r := call(fn, uintptr(p.h), 0, ptrOf(n), ptrOf(&props[0]))
	if r != Incomplete {
		if err := check("vkEnumerateDeviceExtensionProperties", r); err != nil {
			return nil, err
		}
	}
	names := make([]string, int(*n))
	for i := range names {
		names[i] = goString(props[i].extensionName[:])
	}
	return names, nil
}

// MemoryProperties are the device's memory types and heaps, with the
// VK_EXT_memory_budget figures when the device has that extension.
type MemoryProperties struct {
	Types []MemoryType
	Heaps []MemoryHeap
	// Budget and Usage per heap, in bytes; nil without VK_EXT_memory_budget.
	Budget, Usage []uint64
}

// MemoryProperties queries memory types, heaps and (if present) budgets.
func (p PhysicalDevice) MemoryProperties() MemoryProperties {
	exts, _ := p.Extensions()
	budget := slices.Contains(exts, "VK_EXT_memory_budget")
	a := getArena()
	defer putArena(a)
	m2 := newIn[physicalDeviceMemoryProperties2](a)
	m2.sType = stMemoryProperties2
	var mb *memoryBudgetProperties
	if budget {
		mb = newIn[memoryBudgetProperties](a)
		mb.sType = stMemoryBudgetProperties
		m2.pNext = ptrOf(mb)
	}
	callVoid(p.in.getPhysicalDeviceMemoryProperties2, uintptr(p.h), ptrOf(m2))
	mp := &m2.memoryProperties
	nt, nh := min(int(mp.memoryTypeCount), 32), min(int(mp.memoryHeapCount), 16)
	out := MemoryProperties{
		Types: slices.Clone(mp.memoryTypes[:nt]),
		Heaps: slices.Clone(mp.memoryHeaps[:nh]),
	}
	if mb != nil {
		out.Budget = slices.Clone(mb.heapBudget[:nh])
		out.Usage = slices.Clone(mb.heapUsage[:nh])
	}
	return out
}

// QueueFamily is one queue family.
type QueueFamily struct {
	Flags              Flags
	Count              uint32
	TimestampValidBits uint32
}

// QueueFamilies lists the device's queue families.
func (p PhysicalDevice) QueueFamilies() []QueueFamily {
	a := getArena()
	defer putArena(a)
	n := newIn[uint32](a)
	callVoid(p.in.getPhysicalDeviceQueueFamilyProperties, uintptr(p.h), ptrOf(n), 0)
	if *n == 0 {
		return nil
	}
	props := sliceIn[queueFamilyProperties](a, int(*n))
	callVoid(p.in.getPhysicalDeviceQueueFamilyProperties, uintptr(p.h), ptrOf(n), ptrOf(&props[0]))
	out := make([]QueueFamily, *n)
	for i := range out {
		out[i] = QueueFamily{props[i].queueFlags, props[i].queueCount, props[i].timestampValidBits}
	}
	return out
}

// ComputeQueueFamily picks a queue family with compute: a compute-only one
// (an async compute queue on GPUs) if it exists, else the first with
// compute. ok is false if there is none.
func (p PhysicalDevice) ComputeQueueFamily() (index uint32, fam QueueFamily, ok bool) {
	fams := p.QueueFamilies()
	best := -1
	for i, f := range fams {
		if f.Flags&QueueCompute == 0 || f.Count == 0 {
			continue
		}
		if best < 0 || (f.Flags&QueueGraphics == 0 && fams[best].Flags&QueueGraphics != 0) {
			best = i
		}
	}
	if best < 0 {
		return 0, QueueFamily{}, false
	}
	return uint32(best), fams[best], true
}

// CoopMatrixShape is one combination of sizes and component types that
// VK_NV_cooperative_matrix supports (VkCooperativeMatrixPropertiesNV):
// A is M×K, B K×N, C and D M×N.
type CoopMatrixShape struct {
	M, N, K    uint32
	A, B, C, D ComponentType
	Subgroup   bool // scope: a subgroup (the only scope NVIDIA offers)
}

// ComponentType is VkComponentTypeNV.
type ComponentType uint32

// The component types weft's shaders use.
const (
	ComponentFloat16 ComponentType = 0
	ComponentFloat32 ComponentType = 1
	ComponentSint8   ComponentType = 3
	ComponentSint32  ComponentType = 5
)

func (t ComponentType) String() string {
	switch t {
	case ComponentFloat16:
		return "f16"
	case ComponentFloat32:
		return "f32"
	case ComponentSint8:
		return "s8"
	case ComponentSint32:
		return "s32"
	}
	return fmt.Sprintf("type%d", uint32(t))
}

func (s CoopMatrixShape) String() string {
	return fmt.Sprintf("%dx%dx%d %s·%s+%s→%s", s.M, s.N, s.K, s.A, s.B, s.C, s.D)
}

// CoopMatrixShapesNV lists the device's VK_NV_cooperative_matrix shapes
// (none without the extension).
func (p PhysicalDevice) CoopMatrixShapesNV() []CoopMatrixShape {
	fn := p.in.getCooperativeMatrixPropertiesNV
	if fn == 0 {
		return nil
	}
	if exts, err := p.Extensions(); err != nil || !slices.Contains(exts, "VK_NV_cooperative_matrix") {
		return nil
	}
	a := getArena()
	defer putArena(a)
	n := newIn[uint32](a)
	if call(fn, uintptr(p.h), ptrOf(n), 0) != Success || *n == 0 {
		return nil
	}
	props := sliceIn[coopMatrixPropertiesNV](a, int(*n))
	for i := range props {
		props[i].sType = stCooperativeMatrixPropsNV
	}
	if r := call(fn, uintptr(p.h), ptrOf(n), ptrOf(&props[0])); r != Success && r != Incomplete {
		return nil
	}
	out := make([]CoopMatrixShape, *n)
	for i := range out {
		q := props[i]
		out[i] = CoopMatrixShape{q.m, q.n, q.k, ComponentType(q.aType), ComponentType(q.bType), ComponentType(q.cType), ComponentType(q.d), q.scope == 3}
	}
	return out
}

// The cooperative-matrix extensions behind Features.CooperativeMatrix2NV.
const (
	ExtCooperativeMatrixKHR = "VK_KHR_cooperative_matrix"
	ExtCooperativeMatrix2NV = "VK_NV_cooperative_matrix2"
)
