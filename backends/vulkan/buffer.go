//go:build linux && (amd64 || arm64)

package vulkan

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
)

// Buffer is device-local storage memory (one allocation per buffer for
// now; the executor will sub-allocate arenas from large buffers).
type Buffer struct {
	d      *Device
	buf    vk.Buffer
	mem    vk.DeviceMemory
	size   int64
	mapped []byte // AllocMapped: the host's view of the buffer
}

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int64 { return b.size }

const bufferUsage = vk.BufferStorage | vk.BufferTransferSrc | vk.BufferTransferDst

// Alloc allocates a device-local storage buffer of size bytes.
func (d *Device) Alloc(size int64) (*Buffer, error) {
	buf, mem, err := d.allocBuffer(size, bufferUsage, vk.MemoryDeviceLocal, 0, 0)
	if err != nil {
		return nil, err
	}
	return &Buffer{d: d, buf: buf, mem: mem, size: size}, nil
}

// AllocMapped allocates a host-visible, host-coherent storage buffer of
// size bytes that stays mapped (Mapped): small per-step data the host
// writes before a submission (device-local where the device offers such
// memory), or results it reads after one (host-cached when possible, for
// reading back).
func (d *Device) AllocMapped(size int64, readBack bool) (*Buffer, error) {
	preferred, avoid := vk.Flags(vk.MemoryDeviceLocal), vk.Flags(0)
	if readBack {
		preferred, avoid = vk.MemoryHostCached, 0
	}
	buf, mem, err := d.allocBuffer(size, bufferUsage, vk.MemoryHostVisible|vk.MemoryHostCoherent, preferred, avoid)
	if err != nil {
		return nil, err
	}
	data, err := d.dev.MapMemory(mem, 0, uint64(size))
	if err != nil {
		d.dev.DestroyBuffer(buf)
		d.dev.FreeMemory(mem)
		return nil, err
	}
	return &Buffer{d: d, buf: buf, mem: mem, size: size, mapped: data[:size:size]}, nil
}

// Mapped returns the host's view of a buffer from AllocMapped (nil for
// device-local buffers). Writes are visible to the next submission;
// results of a submission are visible once it has finished.
func (b *Buffer) Mapped() []byte { return b.mapped }

// allocBuffer creates a buffer with its own memory of the best type.
func (d *Device) allocBuffer(size int64, usage, required, preferred, avoid vk.Flags) (vk.Buffer, vk.DeviceMemory, error) {
	if size <= 0 {
		return 0, 0, fmt.Errorf("vulkan: buffer size %d", size)
	}
	if max := d.props.MaxMemoryAllocationSize; max > 0 && uint64(size) > max {
		return 0, 0, fmt.Errorf("vulkan: a %d MiB buffer exceeds %s's largest allocation (%d MiB)", size>>20, d.info.Name, max>>20)
	}
	buf, err := d.dev.CreateBuffer(uint64(size), usage)
	if err != nil {
		return 0, 0, err
	}
	req := d.dev.BufferMemoryRequirements(buf)
	ti, ok := d.memoryType(req.MemoryTypeBits, required, preferred, avoid)
	if !ok && required&vk.MemoryDeviceLocal != 0 {
		ti, ok = d.memoryType(req.MemoryTypeBits, required&^vk.MemoryDeviceLocal, preferred, avoid)
	}
	if !ok {
		d.dev.DestroyBuffer(buf)
		return 0, 0, fmt.Errorf("vulkan: %s has no memory type with flags %#x for buffers", d.info.Name, required)
	}
	mem, err := d.dev.AllocateMemory(req.Size, ti, false)
	if err != nil {
		d.dev.DestroyBuffer(buf)
		heap := d.mem.Heaps[d.mem.Types[ti].HeapIndex].Size
		return 0, 0, fmt.Errorf("%w: needed %d MiB, the heap holds %d MiB", err, req.Size>>20, heap>>20)
	}
	if err := d.dev.BindBufferMemory(buf, mem, 0); err != nil {
		d.dev.DestroyBuffer(buf)
		d.dev.FreeMemory(mem)
		return 0, 0, err
	}
	return buf, mem, nil
}

// Free releases the buffer; no submitted work may still use it.
func (b *Buffer) Free() {
	if b == nil || b.buf == 0 {
		return
	}
	if b.mapped != nil {
		b.d.dev.UnmapMemory(b.mem)
		b.mapped = nil
	}
	b.d.dev.DestroyBuffer(b.buf)
	b.d.dev.FreeMemory(b.mem)
	b.buf, b.mem = 0, 0
}

// hostBuffer is a persistently mapped host-visible buffer.
type hostBuffer struct {
	buf      vk.Buffer
	mem      vk.DeviceMemory
	data     []byte
	coherent bool
}

func (h *hostBuffer) free(d *vk.Device) {
	if h == nil || h.buf == 0 {
		return
	}
	d.UnmapMemory(h.mem)
	d.DestroyBuffer(h.buf)
	d.FreeMemory(h.mem)
	h.buf = 0
}

// hostBuf returns *slot, (re)allocated to hold at least n bytes (up to
// stagingChunk).
func (d *Device) hostBuf(slot **hostBuffer, n int64, preferred, avoid vk.Flags) (*hostBuffer, error) {
	n = min(max(n, 1<<20), stagingChunk)
	if h := *slot; h != nil && int64(len(h.data)) >= n {
		return h, nil
	}
	(*slot).free(d.dev)
	*slot = nil
	buf, mem, err := d.allocBuffer(n, vk.BufferTransferSrc|vk.BufferTransferDst, vk.MemoryHostVisible, preferred, avoid)
	if err != nil {
		return nil, err
	}
	data, err := d.dev.MapMemory(mem, 0, uint64(n))
	if err != nil {
		d.dev.DestroyBuffer(buf)
		d.dev.FreeMemory(mem)
		return nil, err
	}
	req := d.dev.BufferMemoryRequirements(buf)
	ti, _ := d.memoryType(req.MemoryTypeBits, vk.MemoryHostVisible, preferred, avoid)
	coherent := d.mem.Types[ti].PropertyFlags&vk.MemoryHostCoherent != 0
	*slot = &hostBuffer{buf: buf, mem: mem, data: data, coherent: coherent}
	return *slot, nil
}

func checkRange(b *Buffer, off, n int64) error {
	if off < 0 || n < 0 || off > b.size || n > b.size-off {
		return fmt.Errorf("vulkan: range [%d, %d) outside a %d-byte buffer", off, off+n, b.size)
	}
	return nil
}

// Upload copies src into dst at byte offset off through the staging
// ring (staging.go). It returns once src is in staging memory: the copy is
// ordered before every later submission, and Download, WaitUploads and
// Close wait for it.
func (d *Device) Upload(dst *Buffer, off int64, src []byte) error {
	if err := checkRange(dst, off, int64(len(src))); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(src) > 0 {
		n, err := d.uploadChunk(dst, off, src)
		if err != nil {
			return err
		}
		src, off = src[n:], off+int64(n)
	}
	return nil
}

// Download copies len(dst) bytes at byte offset off of src into dst and
// waits for the copy. Work that writes src must have completed.
func (d *Device) Download(dst []byte, src *Buffer, off int64) error {
	if err := checkRange(src, off, int64(len(dst))); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.waitUploads(); err != nil {
		return err
	}
	for len(dst) > 0 {
		rb, err := d.hostBuf(&d.reading, int64(len(dst)), vk.MemoryHostCached, 0)
		if err != nil {
			return err
		}
		n := min(len(dst), len(rb.data))
		err = d.transfer(func(cb vk.CommandBuffer) {
			d.dev.CmdCopyBuffer(cb, src.buf, rb.buf, []vk.BufferCopy{{SrcOffset: uint64(off), DstOffset: 0, Size: uint64(n)}})
		}, true)
		if err != nil {
			return err
		}
		if !rb.coherent {
			if err := d.dev.InvalidateMappedMemory(rb.mem, 0, vk.WholeSize); err != nil {
				return err
			}
		}
		copy(dst[:n], rb.data)
		dst, off = dst[n:], off+int64(n)
	}
	return nil
}

// CopyWithin copies n bytes of b at byte offset src to offset dst (the
// ranges must not overlap) and waits; the copy is ordered after earlier
// work and before later compute work.
func (d *Device) CopyWithin(b *Buffer, dst, src, n int64) error {
	if err := checkRange(b, src, n); err != nil {
		return err
	}
	if err := checkRange(b, dst, n); err != nil {
		return err
	}
	if src < dst+n && dst < src+n {
		return fmt.Errorf("vulkan: copy of [%d, %d) onto the overlapping [%d, %d)", src, src+n, dst, dst+n)
	}
	if n == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.waitUploads(); err != nil {
		return err
	}
	return d.transfer(func(cb vk.CommandBuffer) {
		d.dev.CmdCopyBuffer(cb, b.buf, b.buf, []vk.BufferCopy{{SrcOffset: uint64(src), DstOffset: uint64(dst), Size: uint64(n)}})
		d.dev.CmdPipelineBarrier(cb, vk.StageTransfer, vk.StageComputeShader, &vk.Barrier{
			SrcAccess: vk.AccessTransferWrite, DstAccess: vk.AccessShaderRead | vk.AccessShaderWrite}, nil)
	}, false)
}

// transfer records copy into the transfer command buffer between barriers
// that order it after earlier compute and transfer work (and before host
// reads when toHost), submits it and waits. d.mu must be held.
func (d *Device) transfer(record func(vk.CommandBuffer), toHost bool) error {
	cb := d.xfer
	if err := d.dev.ResetCommandBuffer(cb); err != nil {
		return err
	}
	if err := d.dev.BeginCommandBuffer(cb, vk.UsageOneTimeSubmit); err != nil {
		return err
	}
	d.dev.CmdPipelineBarrier(cb, vk.StageComputeShader|vk.StageTransfer, vk.StageTransfer, &vk.Barrier{
		SrcAccess: vk.AccessShaderWrite | vk.AccessTransferWrite, DstAccess: vk.AccessTransferRead | vk.AccessTransferWrite}, nil)
	record(cb)
	if toHost {
		d.dev.CmdPipelineBarrier(cb, vk.StageTransfer, vk.StageHost, &vk.Barrier{
			SrcAccess: vk.AccessTransferWrite, DstAccess: vk.AccessHostRead}, nil)
	}
	if err := d.dev.EndCommandBuffer(cb); err != nil {
		return err
	}
	return d.submitWait(cb, d.fence)
}

// submit queues one command buffer. Vulkan wants submissions to a queue
// externally synchronised: sessions of one model, and models sharing the
// device, submit from their own goroutines.
func (d *Device) submit(cb vk.CommandBuffer, fence vk.Fence) error {
	d.queueMu.Lock()
	defer d.queueMu.Unlock()
	return d.dev.Submit(vk.Submission{CommandBuffers: []vk.CommandBuffer{cb}}, fence)
}

// submitWait submits one command buffer and waits for its fence.
func (d *Device) submitWait(cb vk.CommandBuffer, fence vk.Fence) error {
	if err := d.submit(cb, fence); err != nil {
		return err
	}
	if _, err := d.dev.WaitFence(fence, math.MaxUint64); err != nil {
		return err
	}
	return d.dev.ResetFence(fence)
}

// UploadF32 uploads float32 values at element offset off.
func (d *Device) UploadF32(dst *Buffer, off int64, src []float32) error {
	return d.Upload(dst, 4*off, f32Bytes(src))
}

// DownloadF32 downloads float32 values from element offset off.
func (d *Device) DownloadF32(dst []float32, src *Buffer, off int64) error {
	return d.Download(f32Bytes(dst), src, 4*off)
}

func f32Bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}
