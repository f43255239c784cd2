//go:build linux && (amd64 || arm64)

package vulkan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WEFT_VULKAN_SPIN_US takes microseconds; anything else is an error that
// names the variable.
func TestSpinFromEnv(t *testing.T) {
	t.Setenv(SpinEnv, "")
	d, err := spinFromEnv()
	require.NoError(t, err)
	assert.Zero(t, d)
	t.Setenv(SpinEnv, "250")
	d, err = spinFromEnv()
	require.NoError(t, err)
	assert.Equal(t, 250*time.Microsecond, d)
	for _, bad := range []string{"-1", "x", "1.5", "2000000"} {
		t.Setenv(SpinEnv, bad)
		_, err = spinFromEnv()
		assert.ErrorContains(t, err, SpinEnv, bad)
	}
}
