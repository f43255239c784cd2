//go:build linux && (amd64 || arm64)

package vulkan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WEFT_VULKAN_SPIN_US takes microseconds (unset: the default on a GPU,
// none on a CPU device; 0: none); anything else is an error that names
// the variable.
func TestSpinFromEnv(t *testing.T) {
	gpu, cpu := DeviceInfo{Type: "discrete GPU"}, DeviceInfo{Type: "CPU"}
	t.Setenv(SpinEnv, "")
	d, err := spinFor(gpu)
	require.NoError(t, err)
	assert.Equal(t, defaultSpin, d, "unset: the default on a GPU")
	d, err = spinFor(cpu)
	require.NoError(t, err)
	assert.Zero(t, d, "unset: none on a CPU device")
	t.Setenv(SpinEnv, "0")
	d, err = spinFor(gpu)
	require.NoError(t, err)
	assert.Zero(t, d, "0: block at once")
	t.Setenv(SpinEnv, "300")
	d, err = spinFor(cpu)
	require.NoError(t, err)
	assert.Equal(t, 300*time.Microsecond, d, "set: also on a CPU device")
	t.Setenv(SpinEnv, "250")
	d, err = spinFromEnv()
	require.NoError(t, err)
	assert.Equal(t, 250*time.Microsecond, d)
	for _, bad := range []string{"-1", "x", "1.5", "2000000"} {
		t.Setenv(SpinEnv, bad)
		_, err = spinFor(gpu)
		assert.ErrorContains(t, err, SpinEnv, bad)
	}
}
