//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/weft-ml/weft/internal/testenv"
)

// userFiles sets up what a user has in a folder: a model, a plan compiled
// from it, a link to the model and a FIFO.
func userFiles(t *testing.T) (dir, model, plan string) {
	t.Helper()
	dir = t.TempDir()
	src, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	model, plan = filepath.Join(dir, "m.gguf"), filepath.Join(dir, "m.plan")
	require.NoError(t, os.WriteFile(model, src, 0o644))
	require.NoError(t, runCompile([]string{model, "-o", plan, "--ctx", "64"}))
	require.NoError(t, os.Symlink(model, filepath.Join(dir, "link.gguf")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	return dir, model, plan
}

func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			out[e.Name()] = string(b)
		}
	}
	return out
}

// Classes 1 and 4 through graphc: every command that writes refuses to
// write over its inputs or into special files, every command that reads
// refuses what is not a regular file, and the user's files stay
// byte-identical.
func TestGraphcProtectsUserFiles(t *testing.T) {
	dir, model, plan := userFiles(t)
	in := func(name string) string { return filepath.Join(dir, name) }
	before := readAll(t, dir)
	for _, tc := range []struct {
		name string
		run  func([]string) error
		args []string
		want string
	}{
		{"compile over its model", runCompile, []string{model, "-o", model}, "it is the input file"},
		{"compile over a link to its model", runCompile, []string{model, "-o", in("link.gguf")}, "it is the input file"},
		{"compile into a folder", runCompile, []string{model, "-o", dir}, "it is a directory"},
		{"compile a FIFO", runCompile, []string{in("fifo"), "-o", in("x.plan")}, "named pipe (FIFO), not a regular file"},
		{"compile /dev/zero", runCompile, []string{"/dev/zero", "-o", in("x.plan")}, "character device, not a regular file"},
		{"dump over the plan's model", runDump, []string{plan, "-o", model}, "it is the input file"},
		{"dump over the plan", runDump, []string{plan, "-o", plan}, "it is the input file"},
		{"dump into a FIFO nobody reads", runDump, []string{plan, "-o", in("fifo")}, "no program is reading"},
		{"dump a FIFO", runDump, []string{in("fifo")}, "named pipe (FIFO), not a regular file"},
		{"quantize over its input", runQuantize, []string{model, in("link.gguf"), "F16"}, "it is the input file"},
		{"synth over its vocabulary", runSynth, []string{"-o", model, "--shape", "260k", "--type", "f16", "--vocab", model}, "it is the input file"},
		{"tokenize /dev/zero", runTokenize, []string{model, "--file", "/dev/zero"}, "does not end within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(tc.args)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, before, readAll(t, dir), "the user's files must be byte-identical")
		})
	}
	// Writing to a character device works, in place.
	require.NoError(t, runDump([]string{plan, "-o", os.DevNull}))
	assert.Equal(t, before, readAll(t, dir))
}
