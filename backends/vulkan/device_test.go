//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/shaders"
)

func TestDevicesListed(t *testing.T) {
	d := vulkantest.Open(t) // skips without loader or device
	devs, err := vulkan.Devices()
	require.NoError(t, err)
	require.NotEmpty(t, devs)
	for _, info := range devs {
		t.Log(info)
	}
	assert.Equal(t, devs[0].Name, d.Info().Name)
	assert.True(t, d.Info().Usable)
	_, err = vulkan.Open(len(devs), vulkan.Options{})
	assert.ErrorContains(t, err, "no device")
}

func TestUploadDownloadRoundTrip(t *testing.T) {
	d := vulkantest.Open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	// More than the staging ring holds (every slot is reused while copies
	// run), and an odd size.
	const size = 2*vulkan.RingBytes + 7
	b, err := d.Alloc(size)
	require.NoError(t, err)
	defer b.Free()
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	require.NoError(t, d.Upload(b, 0, src))
	got := make([]byte, size)
	for i := range got {
		got[i] = 0xa5 // poison
	}
	require.NoError(t, d.Download(got, b, 0))
	require.Equal(t, src, got)

	part := []byte{1, 2, 3}
	require.NoError(t, d.Upload(b, 1001, part))
	small := make([]byte, 5)
	require.NoError(t, d.Download(small, b, 1000))
	assert.Equal(t, []byte{src[1000], 1, 2, 3, src[1004]}, small)

	assert.ErrorContains(t, d.Upload(b, size-1, part), "outside")
	assert.ErrorContains(t, d.Download(small, b, -1), "outside")
	_, err = d.Alloc(0)
	assert.Error(t, err)
}

func kernel(t *testing.T, d *vulkan.Device, name string) *vulkan.Kernel {
	t.Helper()
	s, err := shaders.Lookup(name)
	require.NoError(t, err)
	k, err := d.NewKernel(vulkan.KernelSpec{Name: s.Name, SPIRV: s.SPIRV, Bindings: s.Bindings, PushBytes: s.PushBytes, Workgroup: uint32(s.Workgroup)})
	require.NoError(t, err)
	t.Cleanup(k.Close)
	return k
}

func push(vals ...uint32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// TestProgramRecordsOnceRunsMany records x += y twice with a barrier in
// one command buffer and submits it three times: x ends at x0 + 6y.
func TestProgramRecordsOnceRunsMany(t *testing.T) {
	d := vulkantest.Open(t)
	add := kernel(t, d, "add_f32")
	const n = 1000
	x, err := d.Alloc(4 * n)
	require.NoError(t, err)
	defer x.Free()
	y, err := d.Alloc(4 * n)
	require.NoError(t, err)
	defer y.Free()
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i), float32(i%7)
	}
	require.NoError(t, d.UploadF32(x, 0, xs))
	require.NoError(t, d.UploadF32(y, 0, ys))

	p, err := d.NewProgram()
	require.NoError(t, err)
	defer p.Close()
	groups := [3]uint32{(n + 255) / 256, 1, 1}
	require.NoError(t, p.Dispatch(add, groups, push(n, n, 0, 0, 0), vulkan.Whole(x), vulkan.Whole(y), vulkan.Whole(x)))
	p.Barrier()
	require.NoError(t, p.Dispatch(add, groups, push(n, n, 0, 0, 0), vulkan.Whole(x), vulkan.Whole(y), vulkan.Whole(x)))
	require.NoError(t, p.End())
	assert.Equal(t, 2, p.Dispatches())
	for range 3 {
		require.NoError(t, p.Run())
	}
	got := make([]float32, n)
	require.NoError(t, d.DownloadF32(got, x, 0))
	for i := range got {
		require.Equal(t, xs[i]+6*ys[i], got[i], "element %d", i)
	}

	assert.ErrorContains(t, p.Dispatch(add, groups, push(n, n, 0, 0, 0), vulkan.Whole(x), vulkan.Whole(y), vulkan.Whole(x)), "after End")
}

func TestProgramRejectsBadDispatches(t *testing.T) {
	d := vulkantest.Open(t)
	add := kernel(t, d, "add_f32")
	b, err := d.Alloc(4096)
	require.NoError(t, err)
	defer b.Free()
	for name, f := range map[string]func(p *vulkan.Program) error{
		"push size": func(p *vulkan.Program) error {
			return p.Dispatch(add, [3]uint32{1, 1, 1}, push(1), vulkan.Whole(b), vulkan.Whole(b), vulkan.Whole(b))
		},
		"binding count": func(p *vulkan.Program) error {
			return p.Dispatch(add, [3]uint32{1, 1, 1}, push(1, 1, 0, 0, 0), vulkan.Whole(b))
		},
		"zero groups": func(p *vulkan.Program) error {
			return p.Dispatch(add, [3]uint32{0, 1, 1}, push(1, 1, 0, 0, 0), vulkan.Whole(b), vulkan.Whole(b), vulkan.Whole(b))
		},
		"range": func(p *vulkan.Program) error {
			return p.Dispatch(add, [3]uint32{1, 1, 1}, push(1, 1, 0, 0, 0), vulkan.Range{Buf: b, Offset: 4000, Size: 200}, vulkan.Whole(b), vulkan.Whole(b))
		},
		"alignment": func(p *vulkan.Program) error {
			off := int64(d.Properties().Limits.MinStorageBufferOffsetAlignment) + 1 // never aligned
			return p.Dispatch(add, [3]uint32{1, 1, 1}, push(1, 1, 0, 0, 0), vulkan.Range{Buf: b, Offset: off}, vulkan.Whole(b), vulkan.Whole(b))
		},
	} {
		p, err := d.NewProgram()
		require.NoError(t, err)
		err = f(p)
		assert.Error(t, err, name)
		assert.Equal(t, err, p.End(), "%s: End reports the first recording error", name)
		p.Close()
	}
	_, err = d.NewKernel(vulkan.KernelSpec{Name: "bad", SPIRV: []byte{0, 0, 0, 0}, Workgroup: 1 << 20})
	assert.ErrorContains(t, err, "workgroup size")
}

func TestRowGroups(t *testing.T) {
	d := vulkantest.Open(t)
	maxX := d.Properties().Limits.MaxComputeWorkGroupCount[0]
	// Rows near 2^32 too: NVIDIA's limit is 2^31-1, so 3*maxX+5 wraps to
	// 2^31+2 there, which once overflowed the group count.
	for _, rows := range []uint32{1, 7, maxX, maxX + 1, 3*maxX + 5, 1<<31 + 2, 1<<32 - 1} {
		x, y := d.RowGroups(rows)
		assert.LessOrEqual(t, x, maxX)
		assert.GreaterOrEqual(t, uint64(x)*uint64(y), uint64(rows))
		assert.Less(t, uint64(x)*uint64(y-1), uint64(rows), "no whole idle row of groups")
	}
}

// The cooperative matrix shapes a device offers are listed with it, and a
// device takes the tensor-core matmuls only with the shape they use.
func TestDevicesListCoopMatrixShapes(t *testing.T) {
	devs, err := vulkan.Devices()
	if err != nil {
		t.Skipf("no Vulkan device: %v", err)
	}
	for _, d := range devs {
		t.Logf("%s: NV cooperative matrix %v, shapes %v; int8 tensor cores: %v", d.Name, d.Features.CooperativeMatrixNV, d.CoopMatrix, d.CoopInt8())
		if d.CoopInt8() {
			require.True(t, d.Features.CooperativeMatrixNV && d.SubgroupSize == 32, "%s", d)
			require.Contains(t, d.String(), "int8 tensor cores")
		} else {
			require.NotContains(t, d.String(), "int8 tensor cores")
		}
		if d.CoopF16() {
			require.True(t, d.Features.CooperativeMatrixNV && d.Features.ShaderFloat16 && d.SubgroupSize == 32, "%s", d)
			require.Contains(t, d.String(), "f16 tensor cores")
		} else {
			require.NotContains(t, d.String(), "f16 tensor cores")
		}
	}
}

// TestPipelineStatistics opens the device with WEFT_VULKAN_PIPELINE_STATS=1
// and reads a kernel's compile statistics; it skips where the driver lacks
// VK_KHR_pipeline_executable_properties (lavapipe of Debian 12 does).
func TestPipelineStatistics(t *testing.T) {
	t.Setenv(vulkan.PipelineStatsEnv, "1")
	d := vulkantest.Open(t)
	if !d.VK().PipelineStatisticsEnabled() {
		t.Skipf("skipping: %s offers no pipeline statistics", d.Info().Name)
	}
	k := kernel(t, d, "add_f32")
	exes, err := k.Statistics()
	require.NoError(t, err)
	require.NotEmpty(t, exes, "a compute pipeline has an executable")
	for _, e := range exes {
		t.Logf("%s (%s), subgroup %d: %v", e.Name, e.Description, e.SubgroupSize, e.Statistics)
		assert.NotEmpty(t, e.Statistics)
	}
}

// A device description names VK_NV_cooperative_matrix2 exactly when the
// driver offers it.
func TestDeviceInfoNamesCoopMatrix2(t *testing.T) {
	for _, has := range []bool{false, true} {
		d := vulkan.DeviceInfo{Name: "x", CoopMatrix2: has, Usable: true}
		if has {
			require.Contains(t, d.String(), "VK_NV_cooperative_matrix2")
		} else {
			require.NotContains(t, d.String(), "VK_NV_cooperative_matrix2")
		}
	}
}
