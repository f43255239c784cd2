//go:build linux && (amd64 || arm64)

package vulkan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
