package sysmem

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMeminfo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "meminfo")
	require.NoError(t, os.WriteFile(path, []byte("MemTotal:       32000000 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\nSwapTotal: 4 kB\nSwapFree:        1048576 kB\n"), 0o644))
	m, ok := meminfo(path)
	require.True(t, ok)
	assert.Equal(t, int64(21048576)*1024, m.Bytes)
	require.NoError(t, os.WriteFile(path, []byte("MemTotal: 5 kB\n"), 0o644))
	_, ok = meminfo(path)
	assert.False(t, ok, "no MemAvailable (kernels before 3.14)")
}

func TestCgroupRoom(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	dir := t.TempDir()
	write := func(name, s string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644)) }
	write("memory.max", "max\n")
	write("memory.stat", "anon 1000\nfile 5000\n")
	_, ok := room(dir, "memory.max", "anon", "v2")
	assert.False(t, ok, "no limit")
	write("memory.max", "8192\n")
	m, ok := room(dir, "memory.max", "anon", "v2")
	require.True(t, ok)
	assert.Equal(t, int64(7192), m.Bytes)
	write("memory.max", "9223372036854771712\n")
	_, ok = room(dir, "memory.max", "anon", "v1")
	assert.False(t, ok, "v1 unlimited")
}
