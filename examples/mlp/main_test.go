package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestXOR(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	for _, want := range []string{"MatMulBias", "xor(0, 0) = -0.01", "xor(0, 1) = 1.01", "xor(1, 0) = 1.01", "xor(1, 1) = 0.00"} {
		assert.Contains(t, out.String(), want)
	}
}
