package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/testenv"
)

// TestQuantFixturesRegenerate rebuilds testdata/quants the way its README
// says (graphc synth writes the F32 master, llama-quantize c392e5094
// converted it) with graphc quantize instead, which must give llama.cpp's
// bytes: the mix rules, the IQ4_NL fallback of 288-wide rows and the
// IQ4_NL/IQ4_XS/K-quant quantizers, all byte for byte.
func TestQuantFixturesRegenerate(t *testing.T) {
	root := testenv.RepoRoot(t)
	stories := filepath.Join(root, "testdata", "stories260K.gguf")
	for _, c := range []struct {
		name, typ string
		shape     []string
	}{
		{"synth-288-q2_k", "Q2_K", []string{"--dim", "288", "--ffn", "768", "--heads", "6", "--kv-heads", "2"}},
		{"synth-256-iq4_xs", "IQ4_XS", []string{"--dim", "256", "--ffn", "512", "--heads", "4", "--kv-heads", "1"}},
		{"synth-lat-tq1_0", "TQ1_0", []string{"--dim", "256", "--ffn", "256", "--heads", "4", "--kv-heads", "1"}},
		{"synth-lat-tq2_0", "TQ2_0", []string{"--dim", "256", "--ffn", "256", "--heads", "4", "--kv-heads", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			master, out := filepath.Join(dir, "master.gguf"), filepath.Join(dir, "out.gguf")
			args := append([]string{"-o", master, "--shape", "15m", "--type", "f32", "--layers", "1",
				"--vocab-size", "512", "--ctx", "512", "--vocab", stories}, c.shape...)
			require.NoError(t, runSynth(args))
			require.NoError(t, runQuantize([]string{master, out, c.typ}))
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			want, err := os.ReadFile(filepath.Join(root, "testdata", "quants", c.name+".gguf"))
			require.NoError(t, err)
			require.True(t, bytes.Equal(got, want), "graphc quantize differs from llama-quantize's %s.gguf", c.name)
		})
	}
}
