package sysmem

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAvailable(t *testing.T) {
	m, ok := Available()
	if runtime.GOOS != "linux" {
		t.Skipf("%s: %v %v", runtime.GOOS, m, ok)
	}
	require.True(t, ok, "Linux always has /proc/meminfo")
	assert.Positive(t, m.Bytes)
	assert.NotEmpty(t, m.Source)
	restore := SetForTest(Memory{Bytes: 123, Source: "test"})
	got, ok := Available()
	assert.True(t, ok)
	assert.Equal(t, Memory{Bytes: 123, Source: "test"}, got)
	restore()
	got, _ = Available()
	assert.NotEqual(t, int64(123), got.Bytes)
}
