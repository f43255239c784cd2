package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends"
)

// The runtime picks backends by name through the registry; "auto" falls
// back past a backend that cannot load the plan and says why.
func TestBackendChoice(t *testing.T) {
	m, err := Open(stories(t), Options{})
	require.NoError(t, err)
	assert.Equal(t, "cpu", m.Backend)
	m.Close()

	_, err = Open(stories(t), Options{Backend: "nosuch"})
	assert.ErrorContains(t, err, `no backend "nosuch" in this build`)

	_, err = Open(stories(t), Options{Backend: "test-idle"})
	assert.ErrorContains(t, err, "backend test-idle: runs nothing")

	defer func(order []string) { autoOrder = order }(autoOrder)
	autoOrder = []string{"test-idle", "cpu"}
	m, err = Open(stories(t), Options{Backend: AutoBackend})
	require.NoError(t, err)
	defer m.Close()
	assert.Equal(t, "cpu", m.Backend)
	require.Len(t, m.BackendNotes, 1)
	assert.Contains(t, m.BackendNotes[0], "backend test-idle not used (runs nothing): falling back to cpu")
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	_, err = s.Eval([]int32{1, 2}, false)
	require.NoError(t, err)
}

// A plan placed for a device backend says so when asked to run elsewhere.
func TestPlanForAnotherBackend(t *testing.T) {
	if _, err := backends.Lookup("vulkan"); err != nil {
		t.Skip("no vulkan backend in this build")
	}
	path := filepath.Join(t.TempDir(), "v.plan")
	p, err := CompileTo(stories(t), path, CompileOptions{Ctx: 64, Backend: "vulkan"})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	_, err = Open(path, Options{Backend: "cpu"})
	assert.ErrorContains(t, err, "this plan was compiled for the vulkan backend (graphc compile --backend vulkan): run it with --backend vulkan, or recompile it with --backend cpu")
}

// The Vulkan backend keeps its pipeline cache beside the plan; a damaged
// cache only costs time.
func TestPipelineCacheBesidePlan(t *testing.T) {
	skipWithoutVulkanDevice(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "v.plan")
	p, err := CompileTo(stories(t), path, CompileOptions{Ctx: 64, Backend: "vulkan"})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	var done, total int64
	progress := func(d, t int64) { done, total = d, t }
	run := func() {
		t.Helper()
		m, err := Open(path, Options{Backend: "vulkan", LoadProgress: progress})
		require.NoError(t, err)
		s, err := m.NewSession(SessionOptions{})
		require.NoError(t, err)
		_, err = s.Eval([]int32{1, 2, 3}, false)
		require.NoError(t, err)
		require.NoError(t, m.Close())
	}
	run()
	assert.Positive(t, total, "upload progress was reported")
	assert.Equal(t, total, done, "the last progress call reports every byte")
	cache := path + ".vulkan.cache"
	st, err := os.Stat(cache)
	require.NoError(t, err, "the pipeline cache is written when the model closes")
	assert.Positive(t, st.Size())
	require.NoError(t, os.WriteFile(cache, []byte("not a pipeline cache"), 0o644))
	run()
}

// skipWithoutVulkanDevice skips only where this build has no Vulkan
// backend or the loader lists no device; any other Load failure fails.
func skipWithoutVulkanDevice(t *testing.T) {
	t.Helper()
	e, err := backends.Lookup("vulkan")
	if err != nil {
		t.Skip("no vulkan backend in this build")
	}
	devs, err := e.(backends.DeviceLister).Devices()
	if err != nil || len(devs) == 0 {
		t.Skipf("no Vulkan device to run on (%v)", err)
	}
}
