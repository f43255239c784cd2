//go:build linux && (amd64 || arm64)

package vulkan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
)

// bigWeights serves one tensor of size bytes.
type bigWeights struct{ size int }

func (b bigWeights) Tensor(name string) (*gguf.TensorInfo, bool) {
	return &gguf.TensorInfo{Name: name}, true
}
func (b bigWeights) TensorData(*gguf.TensorInfo) []byte { return make([]byte, b.size) }

// A model whose weights exceed the device's memory is refused before any
// upload, with both sizes.
func TestWeightsLargerThanTheDevice(t *testing.T) {
	g := &graph.Graph{Nodes: []*graph.Node{{ID: 0, Op: "Weight", Tensor: "w"}}}
	e := &Executable{g: g, d: &Device{info: DeviceInfo{Name: "tiny GPU", DeviceLocalBytes: 1 << 30}}}
	err := e.checkMemory(bigWeights{size: 3 << 29})
	require.Error(t, err)
	assert.Equal(t, "the weights need 1.50 GiB of device memory, but tiny GPU has 1.00 GiB: use --backend cpu, or a smaller or more quantized model", err.Error())
	e = &Executable{g: g, d: &Device{info: DeviceInfo{Name: "big GPU", DeviceLocalBytes: 4 << 30}}}
	assert.NoError(t, e.checkMemory(bigWeights{size: 3 << 29}))
}

// A session whose KV cache does not fit beside the weights is refused
// before anything is allocated, with every size and the flags to change.
func TestSessionLargerThanTheDevice(t *testing.T) {
	g := &graph.Graph{Nodes: []*graph.Node{{ID: 0, Op: "Attention", Attrs: graph.Attrs{"kv_heads": 4, "head_dim": 64}}}}
	e := &Executable{g: g, attention: []int{0}, arenaElems: 1 << 20, maxTokens: 512, weightBytes: 900 << 20,
		d: &Device{info: DeviceInfo{Name: "tiny GPU", DeviceLocalBytes: 1 << 30}}}
	// 2 × 65536 positions × 256 values × 4 bytes = 128 MiB of KV cache.
	err := e.checkSessionMemory(65536, backends.KVF32)
	require.Error(t, err)
	assert.Equal(t, "vulkan: a session of 65536 positions needs 132 MiB of device memory (KV cache 128 MiB, activations 4 MiB for 512 tokens), but tiny GPU has 124 MiB beside the weights' 900 MiB: use a smaller --ctx or --kv-type f16, or --backend cpu", err.Error())
	assert.NoError(t, e.checkSessionMemory(65536, backends.KVF16), "64 MiB of f16 cache fits")
}
