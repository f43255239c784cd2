package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/runtime/tapdump"
)

// --dump-tensors writes the tapped nodes of every batch (prompt, then one
// per generated token after the first) with an index.
func TestDumpTensors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dump")
	out, summary, err := runCLI(t, stories(t), "--prompt", "Once upon a time", "-n", "3", "--temp", "0",
		"--dump-tensors", dir, "--tap", "blk.*.l_out,result_output")
	require.NoError(t, err)
	assert.Equal(t, ", there was\n", out)
	assert.Contains(t, summary, "dumped 18 tensors to "+dir)
	d, err := tapdump.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, "cpu", d.Meta.Backend)
	assert.Equal(t, "blk.*.l_out,result_output", d.Meta.Pattern)
	require.Len(t, d.Entries, 3*6, "3 batches × (5 layers + logits)")
	e := d.Entries[0]
	assert.Equal(t, tapdump.Entry{Step: 0, Pos: 0, Node: e.Node, Name: "blk.0.ffn_out+l_out", Op: "MatMulAdd", Layer: 0, Backend: "cpu", Rows: 5, Width: 64, File: e.File}, e)
	last := d.Entries[len(d.Entries)-1]
	assert.Equal(t, []any{2, 6, "result_output", 1, 512}, []any{last.Step, last.Pos, last.Name, last.Rows, last.Width})
	v, err := d.Values(last)
	require.NoError(t, err)
	assert.Len(t, v, 512)

	_, _, err = runCLI(t, stories(t), "--prompt", "x", "-n", "1", "--dump-tensors", dir)
	assert.ErrorContains(t, err, "is not empty")
	_, _, err = runCLI(t, stories(t), "--prompt", "x", "-n", "1", "--tap", "*")
	assert.ErrorContains(t, err, "give that too")
}
