package shaders_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/shaders"
)

// A variant's numeric defines (the cooperative-matrix-2 tiles' shapes)
// read back as numbers; names without a value or absent ones do not.
func TestKernelDefines(t *testing.T) {
	k := shaders.Kernel{Defines: []string{"W_F16", "COOP2", "CM_TR=128", "CM_TT=x"}}
	n, ok := k.DefineInt("CM_TR")
	assert.True(t, ok)
	assert.Equal(t, 128, n)
	_, ok = k.DefineInt("CM_TT") // not a number
	assert.False(t, ok)
	_, ok = k.DefineInt("W_F16") // no value
	assert.False(t, ok)
	_, ok = k.DefineInt("CM_TK")
	assert.False(t, ok)
	assert.True(t, k.NeedsCoopMatrix2())
	assert.False(t, k.NeedsCoopMatrix())

	// Every cooperative-matrix-2 variant names its tile (matmul_cm2's
	// rows, tokens and columns a step; attention_cm2's tokens, cache rows
	// and head), and the host's dispatch reads it from there.
	cm2 := 0
	for _, k := range shaders.All() {
		if !k.NeedsCoopMatrix2() {
			continue
		}
		cm2++
		names := []string{"CM_TR", "CM_TT", "CM_TK"}
		if k.Source == "attention_cm2.comp" {
			names = []string{"AT_TQ", "AT_TK", "AT_D"}
		}
		for _, d := range names {
			n, ok := k.DefineInt(d)
			require.True(t, ok, "%s: %s", k.Name, d)
			assert.Zero(t, n%16, "%s: %s=%d, not a multiple of 16", k.Name, d, n)
		}
	}
	assert.NotZero(t, cm2, "no cooperative-matrix-2 variants")
}
