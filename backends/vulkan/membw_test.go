//go:build linux && (amd64 || arm64)

package vulkan_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
)

var _ backends.BandwidthMeter = vulkan.Backend{}

// The bandwidth probe's kernel reads every word exactly once, whatever the
// buffer's length and the number of workgroups (the grid-stride loop, its
// unrolled part and its remainder): its sum of fresh random words is the
// host's, modulo 2³².
func TestStreamReadSumsEveryWord(t *testing.T) {
	d := vulkantest.Open(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	for _, c := range []struct {
		n4     int // uvec4s
		groups uint32
	}{{1, 1}, {3, 2}, {255, 1}, {1025, 1}, {1025, 3}, {4099, 5}, {100003, 7}, {100003, 391}, {262147, 1024}} {
		data := make([]byte, 16*c.n4)
		var want uint32
		for i := 0; i < len(data); i += 4 {
			w := rng.Uint32()
			binary.LittleEndian.PutUint32(data[i:], w)
			want += w
		}
		buf, err := d.Alloc(int64(len(data)))
		require.NoError(t, err)
		require.NoError(t, d.Upload(buf, 0, data))
		times, sum, err := vulkan.StreamRead(d, buf, c.groups, 2)
		buf.Free()
		require.NoError(t, err)
		assert.Equal(t, want, sum, "%d uvec4s on %d workgroups", c.n4, c.groups)
		assert.Len(t, times, 2)
	}
}

// ReadBandwidth returns one positive rate per repetition, checks what it
// read, and refuses arguments it cannot honour with an error.
func TestReadBandwidth(t *testing.T) {
	d := vulkantest.Open(t)
	rates, err := d.ReadBandwidth(4<<20+16, 3)
	require.NoError(t, err)
	require.Len(t, rates, 3)
	for _, r := range rates {
		assert.Greater(t, r, 0.0)
	}
	t.Logf("%s: %.1f GB/s (4 MiB: cached, not the device's memory bandwidth)", d.Info().Name, rates[0])
	// A device whose memory the model fills: the probe halves its buffer
	// (128 MiB, then 64 and 32) rather than fail, but not more than twice.
	restore := vulkan.FailStreamAllocs(2)
	rates, err = d.ReadBandwidth(128<<20, 1)
	restore()
	require.NoError(t, err)
	assert.Len(t, rates, 1)
	restore = vulkan.FailStreamAllocs(3)
	_, err = d.ReadBandwidth(128<<20, 1)
	restore()
	assert.ErrorContains(t, err, "a 32 MiB buffer for the bandwidth probe")
	_, err = d.ReadBandwidth(4<<20, 0)
	assert.ErrorContains(t, err, "at least one repetition")
	_, err = d.ReadBandwidth(4<<20+4, 1)
	assert.ErrorContains(t, err, "multiple of 16")
}
