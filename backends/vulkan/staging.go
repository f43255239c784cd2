//go:build linux && (amd64 || arm64)

package vulkan

import (
	"math"

	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
)

// Uploads go through a ring of staging buffers: while the device copies
// one slot into its destination, the host fills the next, so a model's
// weights stream at the lower of memcpy and bus speed rather than their
// sum. Upload returns once its bytes are in staging memory; the copies
// are ordered before every later submission on the queue (a Program's
// leading barrier covers transfer writes), and waitUploads, which every
// Download and Close call, waits for them.

// ringSlots and ringChunk size the ring.
const (
	ringSlots = 3
	ringChunk = 16 << 20
)

// ringSlot is one staging buffer with its command buffer and fence.
type ringSlot struct {
	buf  *hostBuffer
	cb   vk.CommandBuffer
	done vk.Fence
	busy bool // submitted, fence not yet waited for
}

// slot returns the next ring slot, waiting for its previous copy. d.mu
// must be held.
func (d *Device) slot() (*ringSlot, error) {
	s := &d.ring[d.next%ringSlots]
	d.next++
	if s.cb == 0 {
		var err error
		if s.cb, err = d.dev.AllocateCommandBuffer(d.pool); err != nil {
			return nil, err
		}
		if s.done, err = d.dev.CreateFence(false); err != nil {
			return nil, err
		}
	}
	if err := s.wait(d.dev); err != nil {
		return nil, err
	}
	if _, err := d.hostBuf(&s.buf, ringChunk, vk.MemoryHostCoherent, vk.MemoryDeviceLocal); err != nil {
		return nil, err
	}
	return s, nil
}

// wait waits for the slot's copy, if one is in flight.
func (s *ringSlot) wait(dev *vk.Device) error {
	if !s.busy {
		return nil
	}
	s.busy = false
	if _, err := dev.WaitFence(s.done, math.MaxUint64); err != nil {
		return err
	}
	return dev.ResetFence(s.done)
}

// uploadChunk copies src (at most a slot) into dst at byte offset off
// through the next slot, without waiting for the copy. d.mu must be held.
func (d *Device) uploadChunk(dst *Buffer, off int64, src []byte) (int, error) {
	s, err := d.slot()
	if err != nil {
		return 0, err
	}
	n := copy(s.buf.data, src)
	if !s.buf.coherent {
		if err := d.dev.FlushMappedMemory(s.buf.mem, 0, vk.WholeSize); err != nil {
			return 0, err
		}
	}
	if err := d.dev.ResetCommandBuffer(s.cb); err != nil {
		return 0, err
	}
	if err := d.dev.BeginCommandBuffer(s.cb, vk.UsageOneTimeSubmit); err != nil {
		return 0, err
	}
	// Earlier compute work may still read or write dst.
	d.dev.CmdPipelineBarrier(s.cb, vk.StageComputeShader|vk.StageTransfer, vk.StageTransfer, &vk.Barrier{
		SrcAccess: vk.AccessShaderWrite | vk.AccessShaderRead | vk.AccessTransferWrite, DstAccess: vk.AccessTransferWrite}, nil)
	d.dev.CmdCopyBuffer(s.cb, s.buf.buf, dst.buf, []vk.BufferCopy{{SrcOffset: 0, DstOffset: uint64(off), Size: uint64(n)}})
	if err := d.dev.EndCommandBuffer(s.cb); err != nil {
		return 0, err
	}
	if err := d.submit(s.cb, s.done); err != nil {
		return 0, err
	}
	s.busy = true
	return n, nil
}

// waitUploads waits for every copy in flight. d.mu must be held.
func (d *Device) waitUploads() error {
	var first error
	for i := range d.ring {
		if err := d.ring[i].wait(d.dev); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WaitUploads waits until every Upload has reached its destination.
func (d *Device) WaitUploads() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waitUploads()
}

// freeRing releases the ring (the device must be idle).
func (d *Device) freeRing() {
	for i := range d.ring {
		s := &d.ring[i]
		s.buf.free(d.dev)
		d.dev.DestroyFence(s.done)
		s.buf, s.done, s.cb = nil, 0, 0
	}
}
