package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
)

// needsPacking skips where this build repacks nothing (purego), so no
// side file is written.
func needsPacking(t *testing.T) {
	t.Helper()
	if !simd.HasPackedKernels(gguf.TypeQ4_0) {
		t.Skip("this build (" + simd.Variant() + ") has no packed kernels, so no side file is written")
	}
}

// modelAt writes a small Q4_0 model with seed to dir/name.
func modelAt(t *testing.T, dir, name string, seed uint64) string {
	t.Helper()
	tmp := t.TempDir()
	src := synthQ4(t, tmp, seed)
	dst := filepath.Join(dir, name)
	require.NoError(t, os.Rename(src, dst))
	return dst
}

// snapshot reads every file in dir, so a test can show they are unchanged.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			files[e.Name()] = b
		}
	}
	return files
}

func sideFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.packed"))
	require.NoError(t, err)
	return m
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	require.NoError(t, err)
	assert.Empty(t, m, "temporary files left behind")
}

func loadAndStep(t *testing.T, plan string) error {
	t.Helper()
	m, err := Open(plan, Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := m.NewSession(SessionOptions{})
	if err != nil {
		return err
	}
	_, err = s.Eval([]int32{1, 2, 3}, false)
	return err
}

// Class 2: a recompile that fails at its last step leaves the old plan and
// its side file as they were, loadable, and nothing new behind.
func TestFailedRecompileKeepsOldPlan(t *testing.T) {
	needsPacking(t)
	dir := t.TempDir()
	a, b := modelAt(t, dir, "a.gguf", 1), modelAt(t, dir, "b.gguf", 2)
	plan := filepath.Join(dir, "m.plan")
	p, err := CompileTo(a, plan, CompileOptions{Ctx: 64})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	before := snapshot(t, dir)

	beforePlanCommit = func() error { return errors.New("disk went away") }
	defer func() { beforePlanCommit = nil }()
	_, err = CompileTo(b, plan, CompileOptions{Ctx: 64})
	require.ErrorContains(t, err, "disk went away")
	beforePlanCommit = nil

	assert.Equal(t, before, snapshot(t, dir), "every file is byte-identical")
	require.NoError(t, loadAndStep(t, plan))
}

// Class 2: a successful recompile with other results replaces the side
// file: one plan, one side file, no temporary files.
func TestRecompileReplacesSideFile(t *testing.T) {
	needsPacking(t)
	dir := t.TempDir()
	a, b := modelAt(t, dir, "a.gguf", 1), modelAt(t, dir, "b.gguf", 2)
	plan := filepath.Join(dir, "m.plan")
	for _, in := range []string{a, b, a} {
		p, err := CompileTo(in, plan, CompileOptions{Ctx: 64})
		require.NoError(t, err)
		require.NoError(t, p.Close())
		assert.Len(t, sideFiles(t, dir), 1)
	}
	assertNoTemps(t, dir)
	require.NoError(t, loadAndStep(t, plan))
}

// Class 2: compiles racing to one output each finish; the plan left is
// whole and loadable.
func TestConcurrentCompilesToOnePath(t *testing.T) {
	needsPacking(t)
	dir := t.TempDir()
	models := []string{modelAt(t, dir, "a.gguf", 1), modelAt(t, dir, "b.gguf", 2), modelAt(t, dir, "c.gguf", 3)}
	plan := filepath.Join(dir, "m.plan")
	var wg sync.WaitGroup
	errs := make([]error, len(models))
	for i, in := range models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := CompileTo(in, plan, CompileOptions{Ctx: 64})
			if err == nil {
				err = p.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assertNoTemps(t, dir)
	require.NoError(t, loadAndStep(t, plan))
}

// Class 1: no output of the compiler is its input, or a device that
// cannot hold a side file.
func TestCompileNeverOverwritesItsInput(t *testing.T) {
	needsPacking(t)
	dir := t.TempDir()
	in := modelAt(t, dir, "m.gguf", 1)
	require.NoError(t, os.Link(in, filepath.Join(dir, "hard.plan")))
	before := snapshot(t, dir)
	for _, tc := range []struct{ out, want string }{
		{in, "it is the input file"},
		{filepath.Join(dir, "hard.plan"), "it is the input file"},
		{dir, "it is a directory"},
		{os.DevNull, "go into a file beside the plan"},
	} {
		_, err := CompileTo(in, tc.out, CompileOptions{Ctx: 64})
		require.Error(t, err, tc.out)
		assert.Contains(t, err.Error(), tc.want)
	}
	assert.Equal(t, before, snapshot(t, dir))
}

// Class 8: each damaged plan gets a message that says what is wrong and
// what to do.
func TestReadPlanSaysWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	p, err := CompileTo(stories(t), filepath.Join(dir, "good.plan"), CompileOptions{Ctx: 64})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	good, err := os.ReadFile(filepath.Join(dir, "good.plan"))
	require.NoError(t, err)
	ggufBytes, err := os.ReadFile(stories(t))
	require.NoError(t, err)
	edit := func(old, new string) []byte {
		require.Contains(t, string(good), old)
		return []byte(strings.Replace(string(good), old, new, 1))
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "the file is empty"},
		{"truncated", good[:len(good)/2], "the plan is truncated"},
		{"trailing garbage", append(append([]byte{}, good...), "garbage"...), "unexpected data after the end of the plan"},
		{"second plan appended", append(append([]byte{}, good...), good...), "unexpected data after the end of the plan"},
		{"wrong version", edit(`"version": 3`, `"version": 1`), "plan version 1, this build reads version 3"},
		{"version not a number", edit(`"version": 3`, `"version": "3"`), "has no version number"},
		{"other format", edit(`"format": "weft-plan"`, `"format": "other"`), `format "other"`},
		{"no graph", edit(`"graph":`, `"graph_":`), `no "graph" section`},
		{"no model", edit(`"fingerprint":`, `"fingerprint_":`), `no "model" section`},
		{"no run", edit(`"batch":`, `"batch_":`), `no "run" section`},
		{"wrong type", edit(`"ctx": 64`, `"ctx": "64"`), `field "run.ctx" holds a JSON string`},
		{"a GGUF model", ggufBytes, "this is a GGUF model, not a plan"},
		{"not JSON", []byte("hello"), "not a weft plan file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "bad.plan")
			require.NoError(t, os.WriteFile(path, tc.data, 0o644))
			_, err := ReadPlan(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if tc.name != "a GGUF model" && tc.name != "not JSON" && tc.name != "other format" {
				assert.Contains(t, err.Error(), "recompile it with graphc compile")
			}
		})
	}
}

// Class 8: a plan finds its model relative to its own folder, never
// relative to the working directory.
func TestPlanFindsModelBesideItNotInWorkingDir(t *testing.T) {
	root := t.TempDir()
	project, elsewhere := filepath.Join(root, "project"), filepath.Join(root, "elsewhere")
	require.NoError(t, os.MkdirAll(filepath.Join(project, "models"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, "models"), 0o755))
	src, err := os.ReadFile(stories(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, "models", "m.gguf"), src, 0o644))
	// A different file at the same relative path from the other folder.
	other := append([]byte{}, src...)
	other[len(other)-1] ^= 1
	other = append(other, 0)
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "models", "m.gguf"), other, 0o644))

	t.Chdir(project)
	p, err := CompileTo(filepath.Join("models", "m.gguf"), "m.plan", CompileOptions{Ctx: 64})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	// Move the whole project; run from the other folder.
	moved := filepath.Join(root, "moved")
	require.NoError(t, os.Rename(project, moved))
	t.Chdir(elsewhere)
	require.NoError(t, loadAndStep(t, filepath.Join(moved, "m.plan")))

	require.NoError(t, os.Remove(filepath.Join(moved, "models", "m.gguf")))
	err = loadAndStep(t, filepath.Join(moved, "m.plan"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its model file m.gguf is missing")
	assert.Contains(t, err.Error(), "put the GGUF back")
}

// Class 5: damage anywhere in the side file, even outside the sampled
// fingerprint, is found before a session returns a result.
func TestDamagedSideFileIsFoundByTheFullChecksum(t *testing.T) {
	needsPacking(t)
	dir := t.TempDir()
	in := modelAt(t, dir, "m.gguf", 1)
	plan := filepath.Join(dir, "m.plan")
	p, err := CompileTo(in, plan, CompileOptions{Ctx: 64})
	require.NoError(t, err)
	side := filepath.Join(dir, p.PackedFile)
	require.NoError(t, p.Close())
	data, err := os.ReadFile(side)
	require.NoError(t, err)
	require.Greater(t, len(data), 1024, "the side file must be larger than the sampled head")
	data[600] ^= 0x01 // past the 256 sampled bytes at offset 0, before the sampled tail
	require.Less(t, 600, len(data)-256)
	require.NoError(t, os.WriteFile(side, data, 0o644))

	m, err := Open(plan, Options{})
	require.NoError(t, err, "the sampled fingerprint cannot see this byte")
	defer m.Close()
	err = m.Verify()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "are damaged (checksum")
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	_, err = s.Eval([]int32{1, 2}, false)
	require.Error(t, err, "a session must not return logits from damaged weights")
	assert.Contains(t, err.Error(), "are damaged")
}
