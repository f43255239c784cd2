//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Classes 1 and 4 through graphrun: outputs never land on the files the
// model reads, and inputs that never end or never open are refused at
// once; the user's files stay byte-identical.
func TestGraphrunProtectsUserFiles(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(stories(t))
	require.NoError(t, err)
	model := filepath.Join(dir, "m.gguf")
	require.NoError(t, os.WriteFile(model, src, 0o644))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	hard := filepath.Join(dir, "hard.f32")
	require.NoError(t, os.Link(model, hard))
	gen := []string{"--prompt", "Once", "-n", "2", "--temp", "0"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"logits over the model", append([]string{model, "--logits-out", model}, gen...), "it is the input file"},
		{"logits over a hard link to the model", append([]string{model, "--logits-out", hard}, gen...), "it is the input file"},
		{"logits into a folder", append([]string{model, "--logits-out", dir}, gen...), "it is a directory"},
		{"a FIFO as the model", append([]string{fifo}, gen...), "named pipe (FIFO), not a regular file"},
		{"/dev/zero as the model", append([]string{"/dev/zero"}, gen...), "not a regular file"},
		{"/dev/zero as the prompt", []string{model, "--file", "/dev/zero", "-n", "1"}, "does not end within 64.0 MiB"},
		{"a folder as the prompt", []string{model, "--file", dir, "-n", "1"}, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCLI(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			after, err := os.ReadFile(model)
			require.NoError(t, err)
			assert.Equal(t, src, after, "the model must be byte-identical")
		})
	}
	// A FIFO that nobody writes reads as an empty prompt at once.
	_, _, err = runCLI(t, model, "--file", fifo, "-n", "1", "--no-bos")
	assert.ErrorContains(t, err, "empty prompt")
}
