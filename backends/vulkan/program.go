//go:build linux && (amd64 || arm64)

package vulkan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
)

// KernelSpec describes a compute kernel: a SPIR-V module whose storage
// buffers sit at bindings 0..Bindings-1 of set 0, a push-constant block of
// PushBytes, and the workgroup size as specialization constant 0.
type KernelSpec struct {
	Name      string
	SPIRV     []byte
	Bindings  int
	PushBytes int
	Workgroup uint32   // specialization constant 0
	Spec      []uint32 // further specialization constants, IDs 1, 2, …
}

// Kernel is a compute pipeline with its layouts.
type Kernel struct {
	d        *Device
	spec     KernelSpec
	dsl      vk.DescriptorSetLayout
	layout   vk.PipelineLayout
	pipeline vk.Pipeline
}

// Name returns the kernel's name.
func (k *Kernel) Name() string { return k.spec.Name }

// Workgroup returns the kernel's workgroup size.
func (k *Kernel) Workgroup() uint32 { return k.spec.Workgroup }

// NewKernel creates a compute pipeline.
func (d *Device) NewKernel(s KernelSpec) (k *Kernel, err error) {
	lim := d.props.Limits
	switch {
	case s.Workgroup == 0 || s.Workgroup > lim.MaxComputeWorkGroupInvocations || s.Workgroup > lim.MaxComputeWorkGroupSize[0]:
		return nil, fmt.Errorf("vulkan: kernel %s: workgroup size %d (device maximum %d)", s.Name, s.Workgroup, lim.MaxComputeWorkGroupInvocations)
	case s.PushBytes < 0 || uint32(s.PushBytes) > lim.MaxPushConstantsSize || s.PushBytes%4 != 0:
		return nil, fmt.Errorf("vulkan: kernel %s: %d push-constant bytes (device maximum %d, multiple of 4)", s.Name, s.PushBytes, lim.MaxPushConstantsSize)
	case s.Bindings < 0 || uint32(s.Bindings) > lim.MaxPerStageDescriptorStorageBuf:
		return nil, fmt.Errorf("vulkan: kernel %s: %d storage buffers", s.Name, s.Bindings)
	}
	k = &Kernel{d: d, spec: s}
	defer func() {
		if err != nil {
			k.Close()
			k, err = nil, fmt.Errorf("vulkan: kernel %s: %w", s.Name, err)
		}
	}()
	binds := make([]vk.DescriptorBinding, s.Bindings)
	for i := range binds {
		binds[i] = vk.DescriptorBinding{Binding: uint32(i), Type: vk.DescriptorStorageBuffer, Count: 1}
	}
	if k.dsl, err = d.dev.CreateDescriptorSetLayout(binds); err != nil {
		return k, err
	}
	if k.layout, err = d.dev.CreatePipelineLayout([]vk.DescriptorSetLayout{k.dsl}, uint32(s.PushBytes)); err != nil {
		return k, err
	}
	mod, err := d.dev.CreateShaderModule(s.SPIRV)
	if err != nil {
		return k, err
	}
	defer d.dev.DestroyShaderModule(mod)
	spec := []vk.Specialization{{ID: 0, Value: s.Workgroup}}
	for i, v := range s.Spec {
		spec = append(spec, vk.Specialization{ID: uint32(i + 1), Value: v})
	}
	info := vk.ComputePipelineInfo{Module: mod, Layout: k.layout, Cache: d.cache, Specialize: spec}
	if d.dev.PipelineStatisticsEnabled() {
		info.Flags |= vk.PipelineCreateCaptureStatistics
	}
	if k.pipeline, err = d.dev.CreateComputePipeline(info); err != nil {
		return k, err
	}
	if d.dev.PipelineStatisticsEnabled() {
		k.reportStatistics(os.Stderr)
	}
	return k, nil
}

// PipelineStatsEnv (=1) opens devices with VK_KHR_pipeline_executable_properties
// where the driver has it and prints every kernel's compile statistics
// (registers, shared and local memory, …) to stderr as it is created: one
// line a pipeline executable, "vulkan pipeline NAME wg=N spec=[…] sg=N: stat=value …".
const PipelineStatsEnv = "WEFT_VULKAN_PIPELINE_STATS"

// Statistics returns the kernel's compile statistics; the device must have
// been opened with PipelineStatsEnv=1 on a driver that offers them.
func (k *Kernel) Statistics() ([]vk.PipelineExecutable, error) {
	return k.d.dev.PipelineStatistics(k.pipeline)
}

func (k *Kernel) reportStatistics(w io.Writer) {
	exes, err := k.Statistics()
	if err != nil {
		fmt.Fprintf(w, "vulkan pipeline %s: %v\n", k.spec.Name, err)
		return
	}
	for _, e := range exes {
		var b strings.Builder
		fmt.Fprintf(&b, "vulkan pipeline %s wg=%d spec=%v sg=%d:", k.spec.Name, k.spec.Workgroup, k.spec.Spec, e.SubgroupSize)
		for _, s := range e.Statistics {
			b.WriteString(" " + strings.ReplaceAll(s.String(), " ", "_"))
		}
		fmt.Fprintln(w, b.String())
	}
}

// Close destroys the kernel; no recorded program may still use it.
func (k *Kernel) Close() {
	if k == nil || k.d == nil {
		return
	}
	dev := k.d.dev
	dev.DestroyPipeline(k.pipeline)
	dev.DestroyPipelineLayout(k.layout)
	dev.DestroyDescriptorSetLayout(k.dsl)
	k.d = nil
}

// Range is a byte range of a buffer bound to a kernel; Size 0 means the
// rest of the buffer.
type Range struct {
	Buf          *Buffer
	Offset, Size int64
}

// Whole binds all of b.
func Whole(b *Buffer) Range { return Range{Buf: b} }

// Program is a recorded sequence of dispatches and barriers in one command
// buffer. Record with Dispatch and Barrier, finish with End, then Run (or
// Submit and Wait) as often as needed: descriptor sets and push constants
// are fixed at record time. A Program is used by one goroutine at a time.
type Program struct {
	d      *Device
	pool   vk.CommandPool
	cb     vk.CommandBuffer
	fence  vk.Fence
	dpools []vk.DescriptorPool
	left   int // sets left in the newest descriptor pool
	ended  bool
	err    error // first recording error
	n      int   // dispatches recorded
	bars   int   // barriers recorded
	// barrier: a Barrier was asked for after the last dispatch; it is
	// recorded before the next one (End's own barrier covers a last one).
	barrier bool
	prof    *profile
}

// Descriptor sets come from pools of setsPerPool sets with up to
// maxSetBindings storage buffers each.
const (
	setsPerPool    = 64
	maxSetBindings = 8
	buffersPerPool = setsPerPool * maxSetBindings
)

// NewProgram starts recording a program. It begins with a barrier that
// makes earlier uploads and runs visible to its first dispatch.
func (d *Device) NewProgram() (p *Program, err error) {
	p = &Program{d: d}
	defer func() {
		if err != nil {
			p.Close()
			p = nil
		}
	}()
	if p.pool, err = d.dev.CreateCommandPool(); err != nil {
		return p, err
	}
	if p.cb, err = d.dev.AllocateCommandBuffer(p.pool); err != nil {
		return p, err
	}
	if p.fence, err = d.dev.CreateFence(false); err != nil {
		return p, err
	}
	if err = d.dev.BeginCommandBuffer(p.cb, 0); err != nil {
		return p, err
	}
	d.dev.CmdPipelineBarrier(p.cb, vk.StageTransfer|vk.StageComputeShader, vk.StageComputeShader, &vk.Barrier{
		SrcAccess: vk.AccessTransferWrite | vk.AccessShaderWrite, DstAccess: vk.AccessShaderRead | vk.AccessShaderWrite}, nil)
	return p, nil
}

func (p *Program) fail(err error) error {
	if p.err == nil {
		p.err = err
	}
	return err
}

// Dispatch records k over groups[0]×groups[1]×groups[2] workgroups with
// the given push constants (len(push) must be the kernel's PushBytes) and
// buffers bound to bindings 0, 1, … in order. Dispatches are not ordered
// against each other: put a Barrier between a write and a later read.
func (p *Program) Dispatch(k *Kernel, groups [3]uint32, push []byte, bufs ...Range) error {
	if p.err != nil {
		return p.err
	}
	if p.ended {
		return p.fail(errors.New("vulkan: Dispatch after End"))
	}
	d := p.d
	if k == nil || k.d != d {
		return p.fail(errors.New("vulkan: Dispatch of a closed kernel or one of another device"))
	}
	if len(bufs) != k.spec.Bindings || len(push) != k.spec.PushBytes {
		return p.fail(fmt.Errorf("vulkan: %s takes %d buffers and %d push bytes, got %d and %d", k.spec.Name, k.spec.Bindings, k.spec.PushBytes, len(bufs), len(push)))
	}
	lim := d.props.Limits
	for i, g := range groups {
		if g == 0 || g > lim.MaxComputeWorkGroupCount[i] {
			return p.fail(fmt.Errorf("vulkan: %s: %d workgroups in dimension %d (device maximum %d)", k.spec.Name, g, i, lim.MaxComputeWorkGroupCount[i]))
		}
	}
	binds := make([]vk.BufferBinding, len(bufs))
	for i, r := range bufs {
		if r.Buf == nil || r.Buf.buf == 0 {
			return p.fail(fmt.Errorf("vulkan: %s binding %d: no buffer", k.spec.Name, i))
		}
		size := r.Size
		if size == 0 {
			size = r.Buf.size - r.Offset
		}
		if err := checkRange(r.Buf, r.Offset, size); err != nil || size == 0 {
			return p.fail(fmt.Errorf("vulkan: %s binding %d: bad range offset %d size %d of %d bytes", k.spec.Name, i, r.Offset, size, r.Buf.size))
		}
		if a := lim.MinStorageBufferOffsetAlignment; a > 0 && uint64(r.Offset)%a != 0 {
			return p.fail(fmt.Errorf("vulkan: %s binding %d: offset %d is not a multiple of minStorageBufferOffsetAlignment %d", k.spec.Name, i, r.Offset, a))
		}
		if uint64(size) > uint64(lim.MaxStorageBufferRange) {
			return p.fail(fmt.Errorf("vulkan: %s binding %d: %d MiB exceeds the device's storage-buffer range (%d MiB): split it",
				k.spec.Name, i, size>>20, lim.MaxStorageBufferRange>>20))
		}
		binds[i] = vk.BufferBinding{Binding: uint32(i), Buffer: r.Buf.buf, Offset: uint64(r.Offset), Range: uint64(size)}
	}
	set, err := p.allocSet(k)
	if err != nil {
		return p.fail(err)
	}
	if p.barrier {
		p.barrier = false
		p.bars++
		d.dev.CmdPipelineBarrier(p.cb, vk.StageComputeShader, vk.StageComputeShader, &vk.Barrier{
			SrcAccess: vk.AccessShaderWrite, DstAccess: vk.AccessShaderRead | vk.AccessShaderWrite}, nil)
	}
	d.dev.UpdateDescriptorSet(set, binds)
	d.dev.CmdBindPipeline(p.cb, k.pipeline)
	d.dev.CmdBindDescriptorSet(p.cb, k.layout, 0, set)
	d.dev.CmdPushConstants(p.cb, k.layout, 0, push)
	d.dev.CmdDispatch(p.cb, groups[0], groups[1], groups[2])
	p.n++
	return nil
}

func (p *Program) allocSet(k *Kernel) (vk.DescriptorSet, error) {
	if k.spec.Bindings > maxSetBindings {
		return 0, fmt.Errorf("vulkan: %s: more than %d bindings", k.spec.Name, maxSetBindings)
	}
	if p.left == 0 {
		pool, err := p.d.dev.CreateDescriptorPool(setsPerPool, buffersPerPool)
		if err != nil {
			return 0, err
		}
		p.dpools = append(p.dpools, pool)
		p.left = setsPerPool
	}
	p.left--
	return p.d.dev.AllocateDescriptorSet(p.dpools[len(p.dpools)-1], k.dsl)
}

// Barrier orders every earlier dispatch's writes before every later
// dispatch's reads and writes. It is recorded with the next dispatch, so
// a barrier with no dispatch after it (End has its own) or one repeated
// costs nothing.
func (p *Program) Barrier() {
	if p.err != nil || p.ended || p.n == 0 {
		return // the program's leading barrier orders what came before
	}
	p.barrier = true
}

// Barriers returns the number of barriers recorded between dispatches.
func (p *Program) Barriers() int { return p.bars }

// End finishes recording (with a barrier that makes the results visible to
// later transfers and runs).
func (p *Program) End() error {
	if p.err != nil {
		return p.err
	}
	if p.ended {
		return nil
	}
	p.d.dev.CmdPipelineBarrier(p.cb, vk.StageComputeShader, vk.StageTransfer|vk.StageComputeShader|vk.StageHost, &vk.Barrier{
		SrcAccess: vk.AccessShaderWrite, DstAccess: vk.AccessTransferRead | vk.AccessShaderRead | vk.AccessShaderWrite | vk.AccessHostRead}, nil)
	p.ended = true
	if err := p.d.dev.EndCommandBuffer(p.cb); err != nil {
		return p.fail(err)
	}
	return nil
}

// Dispatches returns the number of dispatches recorded.
func (p *Program) Dispatches() int { return p.n }

// Run submits the program and waits for it to finish.
func (p *Program) Run() error {
	if err := p.Submit(); err != nil {
		return err
	}
	return p.Wait()
}

// Submit submits the program without waiting; call Wait before the next
// Submit.
func (p *Program) Submit() error {
	if p.err != nil {
		return p.err
	}
	if !p.ended {
		return errors.New("vulkan: Submit before End")
	}
	return p.d.submit(p.cb, p.fence)
}

// Wait waits for the last Submit to finish: it polls the fence for the
// device's spin time (SpinEnv), then blocks in vkWaitForFences.
func (p *Program) Wait() error {
	if spin := p.d.spinWait; spin > 0 {
		deadline := time.Now().Add(spin)
		for {
			done, err := p.d.dev.FenceSignaled(p.fence)
			if err != nil {
				return err
			}
			if done {
				return p.d.dev.ResetFence(p.fence)
			}
			if time.Now().After(deadline) {
				break
			}
		}
	}
	if _, err := p.d.dev.WaitFence(p.fence, ^uint64(0)); err != nil {
		return err
	}
	return p.d.dev.ResetFence(p.fence)
}

// SpinEnv names the environment variable that sets how many microseconds
// a step's Wait polls its fence before it blocks in vkWaitForFences (0:
// block at once). A small model's decode step ends every millisecond or
// two, and on NVIDIA's driver a thread blocked in vkWaitForFences woke
// about 90 µs after its step ended: polling instead took TinyLlama's
// decode on an H200 from 759–763 to 878–880 tok/s (Q4_K_M), 842–877 to
// 1 001–1 006 (Q4_0), at the price of one core busy while a step runs, as
// CUDA's default synchronisation does (docs/decisions.md, session 21).
const SpinEnv = "WEFT_VULKAN_SPIN_US"

// defaultSpin covers a decode step of the models weft runs on a GPU today
// (2 ms for TinyLlama in F16): longer steps (prefill, larger models) block
// after it, where a wake-up's 90 µs is a small share of the step. A CPU
// device (lavapipe) does not poll by default: its steps run on the cores
// the polling thread would take.
const defaultSpin = 5 * time.Millisecond

// spinFor is how long Programs on a device of info's type poll their
// fences: SpinEnv when set, else defaultSpin (none on a CPU device).
func spinFor(info DeviceInfo) (time.Duration, error) {
	if os.Getenv(SpinEnv) != "" || info.Type == "CPU" {
		return spinFromEnv()
	}
	return defaultSpin, nil
}

// spinFromEnv reads SpinEnv (unset: 0).
func spinFromEnv() (time.Duration, error) {
	s := os.Getenv(SpinEnv)
	if s == "" {
		return 0, nil
	}
	us, err := strconv.Atoi(s)
	if err != nil || us < 0 || us > 1_000_000 {
		return 0, fmt.Errorf("%s=%q: want microseconds from 0 to 1000000", SpinEnv, s)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Close releases the program; it must not be running.
func (p *Program) Close() {
	if p == nil || p.d == nil {
		return
	}
	dev := p.d.dev
	for _, dp := range p.dpools {
		dev.DestroyDescriptorPool(dp)
	}
	dev.DestroyFence(p.fence)
	dev.DestroyCommandPool(p.pool)
	if p.prof != nil {
		dev.DestroyQueryPool(p.prof.pool)
	}
	p.d = nil
}

// RowGroups spreads rows workgroups (one per row) over x and y, for
// shaders that compute row = y·groups_x + x and skip rows past the end.
func (d *Device) RowGroups(rows uint32) (x, y uint32) {
	maxX := d.props.Limits.MaxComputeWorkGroupCount[0]
	if rows <= maxX {
		return max(rows, 1), 1
	}
	// In 64 bits: rows + maxX overflows 32 where maxX is 2^31-1 (NVIDIA).
	return maxX, uint32((uint64(rows) + uint64(maxX) - 1) / uint64(maxX))
}
