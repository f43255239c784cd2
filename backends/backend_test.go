package backends

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A device's one-line description keeps its whole name (commas and all,
// as lavapipe's); the zero DeviceInfo (the host's) describes nothing.
func TestDeviceInfoString(t *testing.T) {
	assert.Equal(t, "NVIDIA H200, discrete GPU: NVIDIA 580.159.04", DeviceInfo{Name: "NVIDIA H200", Kind: "discrete GPU", Driver: "NVIDIA 580.159.04"}.String())
	assert.Equal(t, "llvmpipe (LLVM 15.0.6, 256 bits), CPU: Mesa", DeviceInfo{Name: "llvmpipe (LLVM 15.0.6, 256 bits)", Kind: "CPU", Driver: "Mesa"}.String())
	assert.Empty(t, DeviceInfo{}.String())
}
