package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListDevicesAndBackendChoice(t *testing.T) {
	out, _, err := runCLI(t, "--list-devices")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^cpu +0 `, out)

	_, _, err = runCLI(t, stories(t), "--prompt", "Once", "-n", "1", "--backend", "nosuch")
	assert.ErrorContains(t, err, `no backend "nosuch" in this build`)

	// auto always runs: on a Vulkan device where one loads the model,
	// else on the CPU with a note saying why.
	out, _, err = runCLI(t, stories(t), "--prompt", "Once upon a time", "-n", "16", "--temp", "0", "--backend", "auto")
	require.NoError(t, err)
	assert.Contains(t, out, ", there was a little girl named Lily.")
}
