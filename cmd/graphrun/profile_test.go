package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/runtime"
)

// TestBenchProfile: --profile prints the tables after the benchmark,
// --profile-out writes the JSON graphc dump reads, --json carries it.
func TestBenchProfile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.json")
	var stdout, stderr bytes.Buffer
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "8", "-n", "3", "-r", "1", "--profile", "--profile-out", out}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "profile decode (stories260K.gguf on cpu): 3 steps of 1 token(s)")
	assert.Contains(t, stdout.String(), "profile prefill 8")
	assert.Contains(t, stdout.String(), "by kind")
	assert.Contains(t, stdout.String(), "MatMulGateUpSwiGLU F32 172x64")
	assert.Contains(t, stderr.String(), "wrote the profile to "+out)
	p, err := runtime.ReadProfile(out)
	require.NoError(t, err)
	require.Len(t, p.Phases, 2)
	assert.Equal(t, "decode", p.Phases[0].Name)
	assert.NotEmpty(t, p.Phases[0].Nodes)

	stdout.Reset()
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "0", "-n", "2", "-r", "1", "--profile", "--json"}, &stdout, &stderr))
	var rep struct {
		Profile *runtime.Profile `json:"profile"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.NotNil(t, rep.Profile)
	require.Len(t, rep.Profile.Phases, 1)
	assert.Equal(t, 2, rep.Profile.Phases[0].Steps)

	stdout.Reset()
	require.NoError(t, runBench(context.Background(), []string{stories(t), "-p", "0", "-n", "2", "-r", "1", "--json"}, &stdout, &stderr))
	assert.NotContains(t, stdout.String(), `"profile"`, "no profile unless asked")
}

func TestBenchProfileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "0", "-n", "0", "--profile"}, "--profile: -p 0 and -n 0 time no step"},
		{[]string{"-p", "0", "-n", "0", "--profile-out", filepath.Join(dir, "p.json")}, "time no step"},
		{[]string{"-n", "1", "--profile-out", filepath.Join(dir, "no", "such", "p.json")}, "--profile-out"},
		{[]string{"-n", "1", "--profile-out", dir}, "--profile-out"},
		{[]string{"-n", "1", "--profile-out", stories(t)}, "it is the input file"},
	} {
		var stdout, stderr bytes.Buffer
		err := runBench(context.Background(), append([]string{stories(t), "-p", "1", "-r", "1"}, c.args...), &stdout, &stderr)
		assert.ErrorContains(t, err, c.want, "%v", c.args)
	}
	_, err := os.Stat(filepath.Join(dir, "p.json"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing written on a refused run")
	var stdout, stderr bytes.Buffer
	assert.ErrorIs(t, runBench(context.Background(), []string{stories(t), "--profile=maybe"}, &stdout, &stderr), errUsage)
	assert.Contains(t, stderr.String(), "invalid boolean value")
}
