package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/testenv"
)

func TestCustomActivation(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"), "Once upon a time", 24))
	assert.Contains(t, out.String(), "pass go-silu swapped 5 activations (blk.0.ffn_silu … blk.4.ffn_silu)")
	assert.Contains(t, out.String(), "with GoSiLU: Once upon a time, there was a little girl named Lily.")
	assert.Contains(t, out.String(), "same story as the built-in SiLU: true")
}
