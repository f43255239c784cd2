package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/runtime/tapdump"
)

// writeDump writes a dump of three nodes over two steps; scale multiplies
// node "b" of step 1.
func writeDump(t *testing.T, scale float32) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "d")
	w, err := tapdump.Create(dir, tapdump.Meta{Backend: "test"})
	require.NoError(t, err)
	for step := range 2 {
		for i, name := range []string{"a", "b", "c"} {
			v := []float32{1, -2, 3, float32(i + step)}
			if name == "b" && step == 1 {
				for j := range v {
					v[j] *= scale
				}
			}
			require.NoError(t, w.Write(tapdump.Entry{Step: step, Node: i, Name: name, Op: "Add", Rows: 2, Width: 2}, v))
		}
	}
	require.NoError(t, w.Close())
	return dir
}

func TestTensorDiff(t *testing.T) {
	a, same, other := writeDump(t, 1), writeDump(t, 1), writeDump(t, 1.1)
	var out bytes.Buffer
	require.NoError(t, tensorDiff([]string{a, same}, &out))
	assert.Contains(t, out.String(), "6 values compared: all agree within rel 0.005")

	out.Reset()
	err := tensorDiff([]string{a, other}, &out)
	require.ErrorIs(t, err, errDiverged)
	assert.Contains(t, out.String(), `first: step 1 node "b" (Add, layer 0), max |Δ| 0.3, rel 0.0909`)
	assert.Contains(t, out.String(), "<- first divergence")
	out.Reset()
	require.NoError(t, tensorDiff([]string{a, other, "--tol", "0.1"}, &out), "within a looser tolerance")

	assert.ErrorContains(t, tensorDiff([]string{a}, &out), "want two dump folders")
	assert.ErrorContains(t, tensorDiff([]string{a, t.TempDir()}, &out), "index.json")
	_, err = tapdump.Create(a, tapdump.Meta{})
	assert.ErrorContains(t, err, "not empty")
}
