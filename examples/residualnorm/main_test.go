package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/testenv"
)

func TestResidualNorms(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"), "Once upon a time"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 7, "tokens, embeddings, 5 layers")
	assert.Contains(t, lines[0], "Once     upon        a     time")
	assert.True(t, strings.HasPrefix(lines[1], "inp_embd "))
	assert.True(t, strings.HasPrefix(lines[6], "blk.4.ffn_out+l_out "))
	assert.Len(t, strings.Fields(lines[6]), 6, "a norm per token")
	assert.Contains(t, lines[6], "18.65")
}
