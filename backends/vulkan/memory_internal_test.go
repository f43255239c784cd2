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

// Quantized caches are sized by their blocks (8.5 and 4.5 bits a value),
// each row padded to whole words; an f16 cache that does not fit names
// the q8_0 cache as a way out.
func TestQuantizedKVBytes(t *testing.T) {
	// 3 KV heads of 32: rows of 3 blocks (102 and 54 bytes), not whole words.
	g := &graph.Graph{Nodes: []*graph.Node{{ID: 0, Op: "Attention", Attrs: graph.Attrs{"kv_heads": 3, "head_dim": 32}}}}
	e := &Executable{g: g, attention: []int{0}, arenaElems: 1 << 20, maxTokens: 512, weightBytes: 900 << 20,
		d: &Device{info: DeviceInfo{Name: "tiny GPU", DeviceLocalBytes: 1 << 30}}}
	for _, c := range []struct {
		kv  backends.KVType
		row int64
	}{{backends.KVF32, 384}, {backends.KVF16, 192}, {backends.KVQ8_0, 104}, {backends.KVQ4_0, 56}} {
		assert.Equal(t, c.row, kvRowBytes(c.kv, 96), "%s", c.kv)
		assert.Equal(t, 2*1000*c.row, e.kvBytes(1000, c.kv), "%s", c.kv)
	}
	err := e.checkSessionMemory(1<<19, backends.KVF16)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "use a smaller --ctx or --flash-attn --kv-type q8_0, or --backend cpu")
	assert.NoError(t, e.checkSessionMemory(1<<19, backends.KVQ4_0), "2 × 2¹⁹ rows of 56 bytes fit")
}
