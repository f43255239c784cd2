package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/cpu"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
)

// copyFile copies src to dst (the tests truncate the copy, never testdata).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o644))
}

// TestTruncatedWeightsAreAnError truncates the mapped model file, and the
// repacked side file, under a running session: the next step must return
// a FaultError naming the file, not kill the process with SIGBUS, every
// later step the same error, and other sessions of the model go on
// running (the worker pool survives).
func TestTruncatedWeightsAreAnError(t *testing.T) {
	type setup struct {
		name   string
		model  func(t *testing.T, dir string) string // returns the GGUF path
		victim func(m *Model, gguf string) string    // the file to truncate
		packed bool
	}
	for _, c := range []setup{
		{
			name: "gguf",
			model: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "m.gguf")
				copyFile(t, stories(t), p)
				return p
			},
			victim: func(_ *Model, gguf string) string { return gguf },
		},
		{
			name:   "packed side file",
			model:  func(t *testing.T, dir string) string { return synthQ4(t, dir, 3) },
			victim: func(m *Model, _ string) string { return m.Plan.sidePath },
			packed: true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.packed && !simd.HasPackedKernels(gguf.TypeQ4_0) {
				t.Skip("this build (" + simd.Variant() + ") has no packed kernels, so nothing is repacked")
			}
			dir := t.TempDir()
			src := c.model(t, dir)
			plan := filepath.Join(dir, "m.plan")
			p, err := CompileTo(src, plan, CompileOptions{Ctx: 64})
			require.NoError(t, err)
			require.NoError(t, p.Close())

			m, err := Open(plan, Options{Threads: 4})
			require.NoError(t, err)
			defer m.Close()
			require.NoError(t, m.Verify())
			victim := c.victim(m, src)
			require.NotEmpty(t, victim)
			s, err := m.NewSession(SessionOptions{})
			require.NoError(t, err)
			_, err = s.Eval([]int32{1, 403, 407}, false)
			require.NoError(t, err)

			st, err := os.Stat(victim)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(victim, 0))
			_, err = s.Step(42)
			var fault *cpu.FaultError
			require.ErrorAs(t, err, &fault, "a step over truncated weights")
			assert.Equal(t, victim, fault.File)
			assert.Equal(t, c.packed, fault.Packed)
			assert.NotEmpty(t, fault.Weight)
			assert.Contains(t, err.Error(), "changed or was truncated while running (memory fault at 0x")
			assert.Contains(t, err.Error(), "restore it and restart")
			t.Log(err)
			_, again := s.Step(42)
			assert.True(t, errors.Is(again, err) || (again != nil && again.Error() == err.Error()), "the broken state keeps its error: %v", again)

			// Restored, the file serves a fresh model and session; the
			// pool's workers survived the fault.
			require.NoError(t, os.Truncate(victim, st.Size()))
			m.Close()
			if c.packed {
				// Zeros are not the repacked bytes: recompile.
				p, err := CompileTo(src, plan, CompileOptions{Ctx: 64})
				require.NoError(t, err)
				require.NoError(t, p.Close())
			} else {
				copyFile(t, stories(t), src)
			}
			m2, err := Open(plan, Options{Threads: 4})
			require.NoError(t, err)
			defer m2.Close()
			s2, err := m2.NewSession(SessionOptions{})
			require.NoError(t, err)
			for range 3 {
				_, err = s2.Eval([]int32{1, 403, 407, 261, 378}, false)
				require.NoError(t, err)
				s2.Reset()
			}
		})
	}
}
