//go:build linux && (amd64 || arm64)

package vulkan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
	"github.com/weft-ml/weft/shaders"
)

// streamBytes is the buffer ReadBandwidth streams where the device allows:
// far beyond any GPU's last-level cache (the H100's and H200's are 50 MiB),
// so every repetition reads device memory.
const streamBytes = 1 << 30

// streamHalvings is how often ReadBandwidth halves a buffer it cannot
// allocate (the model it runs beside may hold most of the device's
// memory): a quarter of streamBytes is still five times the largest
// last-level cache.
const streamHalvings = 2

// testStreamAllocFailures, when positive, makes that many of ReadBandwidth's
// buffer allocations fail with errTestAlloc, as on a device whose memory
// the model fills.
var testStreamAllocFailures int

var errTestAlloc = errors.New("out of device memory (test)")

// streamFill is the word the streamed buffer holds; the kernel's sum of
// it proves every word was read once.
const streamFill = 0x9e3779b9

// ReadBandwidth implements backends.BandwidthMeter: device is the index
// Load takes (graphrun --device; WEFT_VULKAN_DEVICE when it is 0).
func (Backend) ReadBandwidth(device, reps int) ([]float64, error) {
	index, err := deviceIndex(device)
	if err != nil {
		return nil, err
	}
	d, err := sharedDevice(index, nil)
	if err != nil {
		return nil, err
	}
	return d.ReadBandwidth(streamSize(d.info), reps)
}

// streamSize is the buffer ReadBandwidth streams on a device: streamBytes,
// less where one binding cannot address it or it would take more than an
// eighth of the device-local memory.
func streamSize(i DeviceInfo) int64 {
	n := min(int64(streamBytes), int64(i.MaxStorageBufferRange))
	if i.DeviceLocalBytes > 0 {
		n = min(n, int64(i.DeviceLocalBytes/8))
	}
	return n &^ 15
}

// ReadBandwidth streams a device-local buffer of size bytes (a multiple of
// 16) with the stream_read_u32 kernel reps times after a warm-up and returns
// each repetition's rate in GB/s, timed on the device (timestamps around
// the one dispatch). Where size bytes cannot be allocated it halves the
// buffer, up to streamHalvings times. It fails if the kernel's sum of the
// buffer's words is not what was written: the rate of a probe that
// skipped reads would be a lie.
func (d *Device) ReadBandwidth(size int64, reps int) ([]float64, error) {
	if reps < 1 {
		return nil, fmt.Errorf("vulkan: ReadBandwidth needs at least one repetition, got %d", reps)
	}
	if size < 16 || size%16 != 0 {
		return nil, fmt.Errorf("vulkan: ReadBandwidth streams a multiple of 16 bytes, got %d", size)
	}
	buf, err := d.allocStream(size)
	if err != nil {
		return nil, err
	}
	defer buf.Free()
	size = buf.Size()
	if err := d.fill(buf, streamFill); err != nil {
		return nil, err
	}
	n4 := uint64(size / 16)
	groups := uint32(min((n4+255)/256, uint64(d.props.Limits.MaxComputeWorkGroupCount[0]), 8192))
	times, sum, err := d.streamRead(buf, groups, reps+1)
	if err != nil {
		return nil, err
	}
	if want := uint32(size/4) * streamFill; sum != want { // modulo 2³²
		return nil, fmt.Errorf("vulkan: the bandwidth probe summed the buffer to %#x, want %#x: the device did not read what was written", sum, want)
	}
	rates := make([]float64, reps)
	for i := range rates {
		t := times[i+1] // times[0] is the warm-up
		if t <= 0 {
			return nil, errors.New("vulkan: the device's timestamps did not advance over the bandwidth probe")
		}
		rates[i] = float64(size) / t.Seconds() / 1e9
	}
	return rates, nil
}

// allocStream allocates the probe's buffer: size bytes, or half or a
// quarter of it (streamHalvings) where the device refuses more.
func (d *Device) allocStream(size int64) (*Buffer, error) {
	for try, halvings := size, 0; ; try, halvings = try/2, halvings+1 {
		buf, err := d.Alloc(try)
		if err == nil && testStreamAllocFailures > 0 {
			testStreamAllocFailures--
			buf.Free()
			buf, err = nil, errTestAlloc
		}
		if err == nil {
			return buf, nil
		}
		if halvings == streamHalvings || (try/2)%16 != 0 || try/2 == 0 {
			return nil, fmt.Errorf("vulkan: a %d MiB buffer for the bandwidth probe (the model may hold the device's memory): %w", try>>20, err)
		}
	}
}

// streamRead runs stream_read_u32 over all of buf (a multiple of 16 bytes)
// with groups workgroups, runs times in one recorded program, and returns
// each run's device time and the sum of buf's 32-bit words modulo 2³².
func (d *Device) streamRead(buf *Buffer, groups uint32, runs int) ([]time.Duration, uint32, error) {
	s, err := shaders.Lookup("stream_read_u32")
	if err != nil {
		return nil, 0, err
	}
	k, err := d.NewKernel(KernelSpec{Name: s.Name, SPIRV: s.SPIRV, Bindings: s.Bindings, PushBytes: s.PushBytes, Workgroup: uint32(s.Workgroup)})
	if err != nil {
		return nil, 0, err
	}
	defer k.Close()
	part, err := d.Alloc(4 * int64(groups))
	if err != nil {
		return nil, 0, err
	}
	defer part.Free()
	p, err := d.NewProgram()
	if err != nil {
		return nil, 0, err
	}
	defer p.Close()
	if err := p.Profile(); err != nil {
		return nil, 0, err
	}
	push := binary.LittleEndian.AppendUint32(nil, uint32(buf.Size()/16))
	if err := p.Dispatch(k, [3]uint32{groups, 1, 1}, push, Whole(buf), Whole(part)); err != nil {
		return nil, 0, err
	}
	p.Stamp("stream_read")
	if err := p.End(); err != nil {
		return nil, 0, err
	}
	times := make([]time.Duration, runs)
	for i := range times {
		if err := p.Run(); err != nil {
			return nil, 0, err
		}
		_, spans, err := p.Spans()
		if err != nil {
			return nil, 0, err
		}
		times[i] = spans[0]
	}
	words := make([]byte, 4*groups)
	if err := d.Download(words, part, 0); err != nil {
		return nil, 0, err
	}
	var sum uint32
	for i := 0; i < len(words); i += 4 {
		sum += binary.LittleEndian.Uint32(words[i:])
	}
	return times, sum, nil
}

// fill sets every 32-bit word of b to word and waits.
func (d *Device) fill(b *Buffer, word uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.waitUploads(); err != nil {
		return err
	}
	return d.transfer(func(cb vk.CommandBuffer) {
		d.dev.CmdFillBuffer(cb, b.buf, 0, uint64(b.size), word)
		d.dev.CmdPipelineBarrier(cb, vk.StageTransfer, vk.StageComputeShader, &vk.Barrier{
			SrcAccess: vk.AccessTransferWrite, DstAccess: vk.AccessShaderRead | vk.AccessShaderWrite}, nil)
	}, false)
}
