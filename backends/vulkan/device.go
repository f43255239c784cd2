//go:build linux && (amd64 || arm64)

package vulkan

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
	"github.com/weft-ml/weft/shaders"
)

// ErrNoDevice is returned when the loader works but lists no device (with
// no driver installed at all, errors wrap vk.ErrNoDriver instead).
var ErrNoDevice = errors.New("vulkan: the loader lists no device (install a GPU driver, or mesa-vulkan-drivers for the lavapipe CPU device)")

// DeviceInfo describes one physical device.
type DeviceInfo struct {
	Index        int
	Name         string
	Type         string // "discrete GPU", "integrated GPU", "CPU", …
	API          string // Vulkan version the device supports
	Driver       string // driver name and info
	SubgroupSize uint32 // default subgroup size
	// MinSubgroupSize and MaxSubgroupSize bound the sizes a pipeline may
	// require (0 below Vulkan 1.3).
	MinSubgroupSize, MaxSubgroupSize uint32
	MaxStorageBufferRange            uint32 // the largest range one binding may address
	MaxWorkgroupInvocations          uint32
	DeviceLocalBytes                 uint64 // size of the largest device-local heap
	Features                         vk.Features
	// CoopMatrix lists the shapes of VK_NV_cooperative_matrix (tensor
	// cores); the int8 one (CoopInt8) makes prefill matmuls take them.
	CoopMatrix []vk.CoopMatrixShape
	// CoopMatrix2 says whether the driver offers VK_NV_cooperative_matrix2
	// (workgroup-scope matrices, tensor addressing); CoopMatrix2F16 whether
	// the F16 prefill tiles run on it.
	CoopMatrix2 bool
	Usable      bool   // Vulkan 1.2 with a compute queue and subgroup arithmetic
	Why         string // why not, when !Usable
}

func (i DeviceInfo) String() string {
	s := fmt.Sprintf("%d: %s (%s, Vulkan %s, %s), subgroup %d, %d MiB device memory, storage range %d MiB",
		i.Index, i.Name, i.Type, i.API, i.Driver, i.SubgroupSize, i.DeviceLocalBytes>>20, i.MaxStorageBufferRange>>20)
	if i.CoopInt8() {
		s += ", int8 tensor cores (" + coopInt8Shape.String() + ")"
	}
	if i.CoopF16() {
		s += ", f16 tensor cores (" + coopF16Shape.String() + ")"
	}
	switch {
	case i.CoopMatrix2F16():
		s += ", f16 tensor cores by " + vk.ExtCooperativeMatrix2NV
	case i.CoopMatrix2:
		s += ", " + vk.ExtCooperativeMatrix2NV + " (not used: " + i.coopMatrix2Why() + ")"
	}
	if !i.Usable {
		s += " — not usable: " + i.Why
	}
	return s
}

// CoopMatrix2F16 says whether the device runs the F16 prefill tiles on
// cooperative matrix 2 (matmul_cm2.comp): VK_NV_cooperative_matrix2's
// workgroup-scope matrices, flexible dimensions, per-element operations
// and tensor addressing, Vulkan 1.3, binary16 and the Vulkan memory model
// (WEFT_VULKAN_COOPMAT=0 or WEFT_VULKAN_COOPMAT2=0 turns them off: the
// NV (1) tiles take their place).
func (i DeviceInfo) CoopMatrix2F16() bool { return i.coopMatrix2Why() == "" }

// coopMatrix2Why is why the device does not run the cooperative-matrix-2
// kernels ("" if it does).
func (i DeviceInfo) coopMatrix2Why() string {
	f := i.Features
	switch {
	case !i.CoopMatrix2:
		return "no " + vk.ExtCooperativeMatrix2NV
	case !f.CooperativeMatrix2NV:
		return "its workgroup scope, flexible dimensions, per-element operations or tensor addressing missing, or Vulkan 1.3"
	case !f.ShaderFloat16 || !f.StorageBuffer16BitAccess || !f.VulkanMemoryModel:
		return "no binary16 arithmetic or storage, or no Vulkan memory model"
	case os.Getenv("WEFT_VULKAN_COOPMAT") == "0" || os.Getenv("WEFT_VULKAN_COOPMAT2") == "0":
		return "turned off by WEFT_VULKAN_COOPMAT or WEFT_VULKAN_COOPMAT2"
	}
	return ""
}

// coopInt8Shape is the cooperative matrix shape of matmul_coop: a
// subgroup multiplies 16 weight rows × 32 int8 values (one quantized
// block) by 32 × 16 tokens into int32 sums.
var coopInt8Shape = vk.CoopMatrixShape{M: 16, N: 16, K: 32, A: vk.ComponentSint8, B: vk.ComponentSint8, C: vk.ComponentSint32, D: vk.ComponentSint32, Subgroup: true}

// CoopInt8 says whether the device runs the matmul_coop variants of
// matmul_tiled.comp: NV cooperative matrices of coopInt8Shape in 32-wide
// subgroups, and int8 in shaders (WEFT_VULKAN_COOPMAT=0 turns them off).
func (i DeviceInfo) CoopInt8() bool {
	return i.Features.CooperativeMatrixNV && i.Features.ShaderInt8 && i.SubgroupSize == 32 && slices.Contains(i.CoopMatrix, coopInt8Shape) &&
		os.Getenv("WEFT_VULKAN_COOPMAT") != "0"
}

// coopF16Shape is the cooperative matrix shape of matmul_coop_f16: a
// subgroup multiplies 16 weight rows × 16 binary16 columns by 16 × 16
// tokens into float32 sums.
var coopF16Shape = vk.CoopMatrixShape{M: 16, N: 16, K: 16, A: vk.ComponentFloat16, B: vk.ComponentFloat16, C: vk.ComponentFloat32, D: vk.ComponentFloat32, Subgroup: true}

// CoopF16 says whether the device runs the matmul_coop variants for F16
// weights: NV cooperative matrices of coopF16Shape in 32-wide subgroups,
// and binary16 in shaders (WEFT_VULKAN_COOPMAT=0 turns them off too).
func (i DeviceInfo) CoopF16() bool {
	return i.Features.CooperativeMatrixNV && i.Features.ShaderFloat16 && i.SubgroupSize == 32 && slices.Contains(i.CoopMatrix, coopF16Shape) &&
		os.Getenv("WEFT_VULKAN_COOPMAT") != "0"
}

// RunsKernel says whether the device can create kernel k: the
// tensor-core variants need the cooperative matrices of their type.
func (i DeviceInfo) RunsKernel(k shaders.Kernel) bool {
	return runsCoop(k, i.CoopInt8(), i.CoopF16(), i.CoopMatrix2F16())
}

// runsCoop says whether a device with int8 and f16 tensor cores and
// cooperative matrix 2 (cm2) as given runs kernel k: a tensor-core variant
// takes binary16 matrices for F16 weights, for weights it decodes to
// binary16 (binary16Weights) and for attention over an F16 cache, int8
// ones for the other quantized weight types.
func runsCoop(k shaders.Kernel, int8, f16, cm2 bool) bool {
	switch {
	case k.NeedsCoopMatrix2():
		return cm2
	case !k.NeedsCoopMatrix():
		return true
	case binary16Coop(k):
		return f16
	default:
		return int8
	}
}

// binary16Coop says whether tensor-core kernel k multiplies binary16
// matrices: binary16 weights (binary16Weights) or an F16 KV cache.
func binary16Coop(k shaders.Kernel) bool {
	return binary16Weights(k) || slices.Contains(k.Defines, "KV_F16")
}

// binary16Weights says whether matmul kernel k multiplies binary16
// weights: F16 ones, or quantized ones it decodes to binary16 as it
// stages them (KQ_F16: Q4_K's tensor-core gate·up).
func binary16Weights(k shaders.Kernel) bool {
	return slices.Contains(k.Defines, "W_F16") || slices.Contains(k.Defines, "KQ_F16")
}

// coopAttention says whether prefill attention over a KV cache of type
// kv with heads of hd values takes tensor cores here: attention_coop.comp
// reads an F16 cache, heads a multiple of 16 up to attentionTileHeadDim
// (binary16 products summed in the tensor cores' order:
// WEFT_VULKAN_COOPMAT=0 keeps attention_tiled.comp's).
func (d *Device) coopAttention(kv backends.KVType, hd int) bool {
	k, err := shaders.Lookup("attention_coop_" + kv.String())
	return err == nil && runsCoop(k, d.coopInt8, d.coopF16, d.coop2) && hd%16 == 0 && hd <= attentionTileHeadDim
}

// cm2Attention is the prefill attention on cooperative matrix 2
// (attention_cm2.comp) over a KV cache of type kv with heads of hd values,
// where this device runs it: an F16 cache, heads a multiple of 16 of up
// to 64 (the _hd64 variants) or 128 (_hd128). WEFT_VULKAN_CM2_ATTN names
// another measured shape's suffix (shadergen's cm2AttnShapes, e.g. "_k64"), for
// measuring them, and "0" keeps attention_coop.comp's (as
// WEFT_VULKAN_COOPMAT2=0 does, which also keeps matmul_cm2's tiles off).
func (d *Device) cm2Attention(kv backends.KVType, hd int) (shaders.Kernel, bool) {
	shape := os.Getenv("WEFT_VULKAN_CM2_ATTN")
	if !d.coop2 || hd%16 != 0 || hd > 128 || shape == "0" {
		return shaders.Kernel{}, false
	}
	width := 128
	if hd <= 64 {
		width = 64
	}
	base := fmt.Sprintf("attention_cm2_hd%d", width)
	k, err := firstVariant(base+shape+"_"+kv.String(), base+"_"+kv.String())
	return k, err == nil && runsCoop(k, d.coopInt8, d.coopF16, d.coop2)
}

func describe(index int, pd vk.PhysicalDevice) DeviceInfo {
	p := pd.Properties()
	mem := pd.MemoryProperties()
	info := DeviceInfo{
		Index: index, Name: p.Name, Type: vk.TypeName(p.Type), API: p.APIVersion.String(),
		Driver:       p.DriverName + " " + p.DriverInfo,
		SubgroupSize: p.SubgroupSize, MinSubgroupSize: p.MinSubgroupSize, MaxSubgroupSize: p.MaxSubgroupSize,
		MaxStorageBufferRange:   p.Limits.MaxStorageBufferRange,
		MaxWorkgroupInvocations: p.Limits.MaxComputeWorkGroupInvocations,
		Features:                pd.Features(),
		CoopMatrix:              pd.CoopMatrixShapesNV(),
		Usable:                  true,
	}
	if exts, err := pd.Extensions(); err == nil {
		info.CoopMatrix2 = slices.Contains(exts, vk.ExtCooperativeMatrix2NV)
	}
	for _, h := range mem.Heaps {
		if h.Flags&vk.HeapDeviceLocal != 0 {
			info.DeviceLocalBytes = max(info.DeviceLocalBytes, h.Size)
		}
	}
	_, _, compute := pd.ComputeQueueFamily()
	if why := unusable(p, info.Features, compute); why != "" {
		info.Usable, info.Why = false, why
	}
	return info
}

// unusable says why a device of these properties and features cannot run
// weft's kernels, or "" when it can.
func unusable(p vk.Properties, f vk.Features, computeQueue bool) string {
	switch {
	case p.APIVersion < vk.APIVersion(vk.MakeAPIVersion(1, 3, 0)):
		return fmt.Sprintf("Vulkan 1.3 is needed and the driver offers %s: update the driver, or run on the CPU (--backend cpu)", p.APIVersion)
	case !computeQueue:
		return "no compute queue"
	case p.SubgroupStages&vk.StageCompute == 0 || p.SubgroupOperations&vk.SubgroupArithmetic == 0:
		// matvec.comp reduces its sums with subgroupAdd.
		return "no subgroup arithmetic in compute shaders"
	case !f.IntegerDotProduct:
		// The int8 kernels multiply four values at a time (OpSDot,
		// sdot.glsl): Vulkan 1.3 requires shaderIntegerDotProduct, so
		// this is a driver that does not keep to it.
		return "no shader integer dot product (Vulkan 1.3's shaderIntegerDotProduct): update the driver, or run on the CPU (--backend cpu)"
	}
	return ""
}

// Devices lists the physical devices the loader sees.
func Devices() ([]DeviceInfo, error) {
	in, err := vk.CreateInstance(vk.InstanceOptions{})
	if err != nil {
		return nil, err
	}
	defer in.Destroy()
	pds, err := in.PhysicalDevices()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, len(pds))
	for i, pd := range pds {
		out[i] = describe(i, pd)
	}
	return out, nil
}

// Options configures Open.
type Options struct {
	// Validation turns on VK_LAYER_KHRONOS_validation (an error if it is
	// not installed); its messages go to OnMessage.
	Validation bool
	// OnMessage receives validation and driver warnings and errors. It
	// may be called from any goroutine that calls into the Device.
	OnMessage func(vk.Message)
	// PipelineCache seeds the device's pipeline cache with data from an
	// earlier PipelineCacheData (the driver ignores data from another
	// device or driver), so kernels are not compiled again.
	PipelineCache []byte
}

// Device is one opened Vulkan device with a compute queue. Its methods are
// safe for concurrent use except where noted.
type Device struct {
	inst  *vk.Instance
	dev   *vk.Device
	info  DeviceInfo
	props vk.Properties
	mem   vk.MemoryProperties
	// coopInt8, coopF16: the device was created with NV cooperative
	// matrices of those types (info.CoopInt8, info.CoopF16 when it was
	// opened), so matmul_coop runs on it for quantized, F16 weights.
	coopInt8, coopF16 bool
	coop2             bool // and with cooperative matrix 2 (CoopMatrix2F16)

	mu      sync.Mutex // guards the transfer objects below
	pool    vk.CommandPool
	xfer    vk.CommandBuffer
	fence   vk.Fence
	ring    [ringSlots]ringSlot // staging buffers for uploads (staging.go)
	next    int                 // the ring slot to use next
	reading *hostBuffer         // host-visible (cached if possible), for downloads

	cache vk.PipelineCache // every kernel's pipeline goes through it (Open)

	queueMu sync.Mutex // guards submissions to the queue (submit)

	// spinWait is how long a Program's Wait polls its fence before it
	// blocks in vkWaitForFences (spinFor, when the device opens).
	spinWait time.Duration
}

// stagingChunk caps the host-visible staging buffers; larger transfers go
// through in pieces.
const stagingChunk = 32 << 20

// Open opens device index (an index into Devices()).
func Open(index int, opts Options) (*Device, error) {
	in, err := vk.CreateInstance(vk.InstanceOptions{Validation: opts.Validation, OnMessage: opts.OnMessage})
	if err != nil {
		return nil, err
	}
	d, err := open(in, index)
	if err != nil {
		in.Destroy()
		return nil, err
	}
	if d.spinWait, err = spinFor(d.info); err != nil {
		d.closeDevice()
		return nil, err
	}
	if d.cache, err = d.dev.CreatePipelineCache(opts.PipelineCache); err != nil {
		// Data the driver rejects outright: start with an empty cache.
		if d.cache, err = d.dev.CreatePipelineCache(nil); err != nil {
			d.closeDevice()
			return nil, err
		}
	}
	return d, nil
}

// PipelineCacheData returns the pipeline cache's contents, to be stored
// and given to a later Open (Options.PipelineCache).
func (d *Device) PipelineCacheData() ([]byte, error) {
	if d.cache == 0 {
		return nil, nil
	}
	return d.dev.PipelineCacheData(d.cache)
}

func open(in *vk.Instance, index int) (*Device, error) {
	pds, err := in.PhysicalDevices()
	if err != nil {
		return nil, err
	}
	if len(pds) == 0 {
		return nil, ErrNoDevice
	}
	if index < 0 || index >= len(pds) {
		return nil, fmt.Errorf("vulkan: no device %d (the loader lists %d)", index, len(pds))
	}
	pd := pds[index]
	info := describe(index, pd)
	if !info.Usable {
		return nil, fmt.Errorf("vulkan: device %d (%s) is not usable: %s", index, info.Name, info.Why)
	}
	fam, _, _ := pd.ComputeQueueFamily()
	want := wanted(info.Features)
	want.CooperativeMatrixNV = info.CoopInt8() || info.CoopF16()
	want.CooperativeMatrix2NV = info.CoopMatrix2F16()
	opts := vk.DeviceOptions{QueueFamily: fam, Features: want}
	if os.Getenv(PipelineStatsEnv) == "1" {
		if exts, err := pd.Extensions(); err == nil && slices.Contains(exts, vk.ExtPipelineExecutableProperties) {
			opts.PipelineStatistics = true
		} else {
			fmt.Fprintf(os.Stderr, "vulkan: %s: %s lacks %s: no pipeline statistics\n", PipelineStatsEnv, info.Name, vk.ExtPipelineExecutableProperties)
		}
	}
	dev, err := pd.CreateDevice(opts)
	if err != nil {
		return nil, err
	}
	d := &Device{inst: in, dev: dev, info: info, props: pd.Properties(), mem: pd.MemoryProperties(), coopInt8: info.CoopInt8(), coopF16: info.CoopF16(), coop2: info.CoopMatrix2F16()}
	if err := d.initTransfer(); err != nil {
		d.closeDevice()
		return nil, err
	}
	return d, nil
}

// wanted enables every supported feature the shaders may use.
func wanted(s vk.Features) vk.Features {
	return vk.Features{
		ShaderInt16: s.ShaderInt16, ShaderInt64: s.ShaderInt64,
		StorageBuffer16BitAccess:           s.StorageBuffer16BitAccess,
		UniformAndStorageBuffer16BitAccess: s.UniformAndStorageBuffer16BitAccess,
		StorageBuffer8BitAccess:            s.StorageBuffer8BitAccess,
		UniformAndStorageBuffer8BitAccess:  s.UniformAndStorageBuffer8BitAccess,
		ShaderFloat16:                      s.ShaderFloat16, ShaderInt8: s.ShaderInt8,
		ShaderSubgroupExtendedTypes: s.ShaderSubgroupExtendedTypes,
		HostQueryReset:              s.HostQueryReset, TimelineSemaphore: s.TimelineSemaphore,
		VulkanMemoryModel: s.VulkanMemoryModel, VulkanMemoryModelDeviceScope: s.VulkanMemoryModelDeviceScope,
		SubgroupSizeControl: s.SubgroupSizeControl, ComputeFullSubgroups: s.ComputeFullSubgroups,
		Maintenance4: s.Maintenance4, IntegerDotProduct: s.IntegerDotProduct,
	}
}

func (d *Device) initTransfer() error {
	var err error
	if d.pool, err = d.dev.CreateCommandPool(); err != nil {
		return err
	}
	if d.xfer, err = d.dev.AllocateCommandBuffer(d.pool); err != nil {
		return err
	}
	d.fence, err = d.dev.CreateFence(false)
	return err
}

// Info describes the device.
func (d *Device) Info() DeviceInfo { return d.info }

// Properties returns the device's full properties.
func (d *Device) Properties() vk.Properties { return d.props }

// VK returns the underlying binding device, for what this package does
// not wrap.
func (d *Device) VK() *vk.Device { return d.dev }

// Close waits for the device to finish and releases the device and the
// instance. Buffers, kernels and programs must be closed first.
func (d *Device) Close() error {
	if d == nil || d.dev == nil {
		return nil
	}
	d.mu.Lock()
	err := d.waitUploads()
	d.mu.Unlock()
	if werr := d.dev.WaitIdle(); err == nil {
		err = werr
	}
	d.closeDevice()
	return err
}

func (d *Device) closeDevice() {
	d.dev.DestroyPipelineCache(d.cache)
	d.freeRing()
	d.reading.free(d.dev)
	d.dev.DestroyFence(d.fence)
	d.dev.DestroyCommandPool(d.pool)
	d.dev.Destroy()
	d.inst.Destroy()
	d.dev, d.inst = nil, nil
}

// memoryType picks a memory type allowed by bits that has every required
// flag, preferring types with the preferred flags and without the avoided
// ones. ok is false if none qualifies.
func (d *Device) memoryType(bits uint32, required, preferred, avoid vk.Flags) (uint32, bool) {
	best, bestScore := -1, -1
	for i, t := range d.mem.Types {
		if bits&(1<<i) == 0 || t.PropertyFlags&required != required {
			continue
		}
		score := 0
		if t.PropertyFlags&preferred == preferred {
			score += 2
		}
		if t.PropertyFlags&avoid == 0 {
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return uint32(best), best >= 0
}
