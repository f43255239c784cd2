//go:build linux && (amd64 || arm64)

package vk

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testInstance creates an instance with validation (when the layer is
// installed) and fails the test on any validation message. It skips only
// where there is no loader or no device at all.
func testInstance(t *testing.T) (*Instance, PhysicalDevice) {
	t.Helper()
	if err := Load(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	var mu sync.Mutex
	var msgs []string
	opts := InstanceOptions{
		Validation: HasValidationLayer(),
		OnMessage: func(m Message) {
			mu.Lock()
			msgs = append(msgs, m.String())
			mu.Unlock()
		},
	}
	if !opts.Validation {
		t.Logf("%s not installed: running without validation", ValidationLayer)
	}
	in, err := CreateInstance(opts)
	if errors.Is(err, ErrNoDriver) {
		t.Skipf("skipping: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		in.Destroy()
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, msgs, "validation messages")
	})
	devs, err := in.PhysicalDevices()
	require.NoError(t, err)
	if len(devs) == 0 {
		t.Skip("skipping: the Vulkan loader sees no device (install mesa-vulkan-drivers for lavapipe)")
	}
	return in, devs[0]
}

func TestErrorNamesCallAndCode(t *testing.T) {
	err := check("vkAllocateMemory", ErrorOutOfDeviceMemory)
	require.Error(t, err)
	assert.Equal(t, "vulkan: vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY", err.Error())
	var ve *Error
	require.True(t, errors.As(err, &ve))
	assert.Equal(t, ErrorOutOfDeviceMemory, ve.Code)
	assert.Equal(t, "VkResult(-12345)", Result(-12345).String())
	assert.NoError(t, check("vkX", Success))
}

func TestNoLoaderMessage(t *testing.T) {
	assert.Contains(t, ErrNoLoader.Error(), "libvulkan.so.1")
	assert.Contains(t, ErrNoLoader.Error(), "install libvulkan1")
}

func TestArenaIsOutsideGoHeapAndReused(t *testing.T) {
	a := getArena()
	p := newIn[uint64](a)
	*p = 42
	s := a.cstr("hello")
	assert.Equal(t, "hello", goString(unsafe.Slice((*byte)(unsafe.Pointer(p)), 8+6)[8:]))
	assert.Equal(t, ptrOf(p)+8, s)
	big := sliceIn[byte](a, 3*chunkSize) // a one-off chunk
	big[len(big)-1] = 1
	putArena(a)
	b := getArena()
	defer putArena(b)
	q := newIn[uint64](b)
	assert.Equal(t, unsafe.Pointer(p), unsafe.Pointer(q), "chunks are reused")
	assert.Zero(t, *q, "reused memory is zeroed")
}

func TestInstanceAndDeviceQueries(t *testing.T) {
	in, pd := testInstance(t)
	ver, err := InstanceVersion()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, uint32(ver), MakeAPIVersion(1, 2, 0))
	props := pd.Properties()
	t.Logf("device %q (%s), Vulkan %s, driver %s %s, subgroup %d [%d, %d], storage range %d MiB",
		props.Name, TypeName(props.Type), props.APIVersion, props.DriverName, props.DriverInfo,
		props.SubgroupSize, props.MinSubgroupSize, props.MaxSubgroupSize, props.Limits.MaxStorageBufferRange>>20)
	assert.NotEmpty(t, props.Name)
	assert.NotZero(t, props.SubgroupSize)
	assert.NotZero(t, props.SubgroupOperations&SubgroupBasic)
	assert.GreaterOrEqual(t, props.Limits.MaxComputeWorkGroupInvocations, uint32(128))
	assert.GreaterOrEqual(t, props.Limits.MaxPushConstantsSize, uint32(128))
	assert.NotZero(t, props.Limits.MaxStorageBufferRange)
	assert.NotZero(t, props.MaxMemoryAllocationSize)
	if props.APIVersion >= APIVersion(MakeAPIVersion(1, 3, 0)) && in.APIVersion() >= APIVersion(MakeAPIVersion(1, 3, 0)) {
		assert.NotZero(t, props.MinSubgroupSize)
		assert.LessOrEqual(t, props.MinSubgroupSize, props.SubgroupSize)
		assert.GreaterOrEqual(t, props.MaxSubgroupSize, props.SubgroupSize)
	}
	if strings.Contains(props.Name, "llvmpipe") {
		assert.Equal(t, uint32(DeviceTypeCPU), props.Type)
		assert.Equal(t, uint32(128<<20), props.Limits.MaxStorageBufferRange, "lavapipe's storage buffer range")
	}
	f := pd.Features()
	t.Logf("features: %+v", f)
	assert.True(t, f.TimelineSemaphore, "timeline semaphores are core in 1.2")
	mem := pd.MemoryProperties()
	require.NotEmpty(t, mem.Types)
	require.NotEmpty(t, mem.Heaps)
	for _, mt := range mem.Types {
		assert.Less(t, int(mt.HeapIndex), len(mem.Heaps))
	}
	_, fam, ok := pd.ComputeQueueFamily()
	require.True(t, ok)
	assert.NotZero(t, fam.Count)
}

// TestDeviceRoundTrip exercises buffers, mapping, fill/copy commands,
// barriers, fences, timeline semaphores, timestamps and the pipeline
// cache, with validation on.
func TestDeviceRoundTrip(t *testing.T) {
	_, pd := testInstance(t)
	fam, qf, ok := pd.ComputeQueueFamily()
	require.True(t, ok)
	sup := pd.Features()
	d, err := pd.CreateDevice(DeviceOptions{QueueFamily: fam, Features: Features{
		TimelineSemaphore: true, HostQueryReset: sup.HostQueryReset,
	}})
	require.NoError(t, err)
	defer d.Destroy()

	_, err = pd.CreateDevice(DeviceOptions{QueueFamily: fam, Extensions: []string{"VK_WEFT_no_such_extension"}})
	require.ErrorContains(t, err, "VK_WEFT_no_such_extension")

	mem := pd.MemoryProperties()
	const size = 4096 + 12
	buf, err := d.CreateBuffer(size, BufferStorage|BufferTransferSrc|BufferTransferDst)
	require.NoError(t, err)
	defer d.DestroyBuffer(buf)
	req := d.BufferMemoryRequirements(buf)
	require.GreaterOrEqual(t, req.Size, uint64(size))
	ti := -1
	for i, mt := range mem.Types {
		if req.MemoryTypeBits&(1<<i) != 0 && mt.PropertyFlags&(MemoryHostVisible|MemoryHostCoherent) == MemoryHostVisible|MemoryHostCoherent {
			ti = i
			break
		}
	}
	require.GreaterOrEqual(t, ti, 0, "a host-visible coherent memory type")
	m, err := d.AllocateMemory(req.Size, uint32(ti), false)
	require.NoError(t, err)
	defer d.FreeMemory(m)
	require.NoError(t, d.BindBufferMemory(buf, m, 0))
	mapped, err := d.MapMemory(m, 0, size)
	require.NoError(t, err)
	for i := range mapped {
		mapped[i] = byte(i * 7)
	}

	pool, err := d.CreateCommandPool()
	require.NoError(t, err)
	defer d.DestroyCommandPool(pool)
	cb, err := d.AllocateCommandBuffer(pool)
	require.NoError(t, err)
	qp, err := d.CreateTimestampQueryPool(2)
	require.NoError(t, err)
	defer d.DestroyQueryPool(qp)
	timestamps := qf.TimestampValidBits > 0

	require.NoError(t, d.BeginCommandBuffer(cb, UsageOneTimeSubmit))
	if timestamps {
		d.CmdResetQueryPool(cb, qp, 0, 2)
		d.CmdWriteTimestamp(cb, StageTopOfPipe, qp, 0)
	}
	d.CmdFillBuffer(cb, buf, 0, 2048, 0xdeadbeef)
	d.CmdPipelineBarrier(cb, StageTransfer, StageTransfer, nil, []BufferBarrier{{
		SrcAccess: AccessTransferWrite, DstAccess: AccessTransferRead | AccessTransferWrite, Buffer: buf, Size: WholeSize}})
	d.CmdCopyBuffer(cb, buf, buf, []BufferCopy{{SrcOffset: 0, DstOffset: 2048, Size: 16}})
	d.CmdPipelineBarrier(cb, StageTransfer, StageHost, &Barrier{SrcAccess: AccessTransferWrite, DstAccess: AccessHostRead}, nil)
	if timestamps {
		d.CmdWriteTimestamp(cb, StageBottomOfPipe, qp, 1)
	}
	require.NoError(t, d.EndCommandBuffer(cb))

	sem, err := d.CreateTimelineSemaphore(5)
	require.NoError(t, err)
	defer d.DestroySemaphore(sem)
	fence, err := d.CreateFence(false)
	require.NoError(t, err)
	defer d.DestroyFence(fence)
	done, err := d.FenceSignaled(fence)
	require.NoError(t, err)
	assert.False(t, done)

	require.NoError(t, d.Submit(Submission{CommandBuffers: []CommandBuffer{cb}, Wait: []TimelineOp{{sem, 6}}, Signal: []TimelineOp{{sem, 7}}}, fence))
	ok, err = d.WaitFence(fence, 1e6)
	require.NoError(t, err)
	assert.False(t, ok, "the submission waits for the timeline to reach 6")
	require.NoError(t, d.SignalSemaphore(sem, 6))
	ok, err = d.WaitSemaphore(sem, 7, 10e9)
	require.NoError(t, err)
	require.True(t, ok)
	v, err := d.SemaphoreValue(sem)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), v)
	ok, err = d.WaitFence(fence, 10e9)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, d.ResetFence(fence))

	for i := 0; i < 2048+16; i += 4 {
		require.Equal(t, []byte{0xef, 0xbe, 0xad, 0xde}, mapped[i:i+4], "byte %d", i)
	}
	after := 2048 + 16
	assert.Equal(t, byte(after*7), mapped[after], "bytes after the copy are untouched")
	d.UnmapMemory(m)

	if timestamps {
		ts, err := d.TimestampResults(qp, 0, 2)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, ts[1], ts[0])
	}

	cache, err := d.CreatePipelineCache(nil)
	require.NoError(t, err)
	data, err := d.PipelineCacheData(cache)
	require.NoError(t, err)
	d.DestroyPipelineCache(cache)
	cache2, err := d.CreatePipelineCache(data)
	require.NoError(t, err, "a cache accepts its own data")
	d.DestroyPipelineCache(cache2)

	_, err = d.CreateShaderModule([]byte{1, 2, 3})
	require.ErrorContains(t, err, "whole number of words")
	require.NoError(t, d.WaitIdle())
}

// TestValidationMessagesAreReported checks the messenger path itself: a
// deliberately invalid call must produce a validation error.
func TestValidationMessagesAreReported(t *testing.T) {
	if err := Load(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if !HasValidationLayer() {
		t.Skipf("skipping: %s not installed", ValidationLayer)
	}
	var msgs []Message
	var mu sync.Mutex
	in, err := CreateInstance(InstanceOptions{Validation: true, OnMessage: func(m Message) {
		mu.Lock()
		msgs = append(msgs, m)
		mu.Unlock()
	}})
	if errors.Is(err, ErrNoDriver) {
		t.Skipf("skipping: %v", err)
	}
	require.NoError(t, err)
	defer in.Destroy()
	devs, err := in.PhysicalDevices()
	require.NoError(t, err)
	if len(devs) == 0 {
		t.Skip("skipping: no Vulkan device")
	}
	fam, _, _ := devs[0].ComputeQueueFamily()
	d, err := devs[0].CreateDevice(DeviceOptions{QueueFamily: fam})
	require.NoError(t, err)
	defer d.Destroy()
	// Storage usage of size 0 is invalid (VUID-VkBufferCreateInfo-size-00912).
	b, _ := d.CreateBuffer(0, BufferStorage)
	d.DestroyBuffer(b)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, msgs, "the validation layer reports a zero-sized buffer")
	assert.NotZero(t, msgs[0].Severity&SeverityError)
	assert.Contains(t, msgs[0].String(), "size")
}
