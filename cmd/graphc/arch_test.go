package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model"
)

// rewritten writes stories260K with edit applied to its metadata and
// tensors, and returns the new file's path.
func rewritten(t *testing.T, edit func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec)) string {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	defer f.Close()
	kv := append([]gguf.KV(nil), f.KV...)
	var ts []gguf.TensorSpec
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		ts = append(ts, gguf.TensorSpec{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: f.TensorData(ti)})
	}
	kv, ts = edit(kv, ts)
	path := filepath.Join(t.TempDir(), "edited.gguf")
	require.NoError(t, gguf.WriteFile(path, kv, ts))
	return path
}

func withArch(arch string) func([]gguf.KV, []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
	return func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		for i := range kv {
			if kv[i].Key == "general.architecture" {
				kv[i].Value = gguf.ValueOf(arch)
			}
		}
		return kv, ts
	}
}

func reshaped(name string, dims []uint64) func([]gguf.KV, []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
	return func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		for i := range ts {
			if ts[i].Name == name { // an F32 tensor: 4 bytes an element
				ts[i].Dims, ts[i].Data = dims, ts[i].Data[:4*dims[0]*dims[1]]
			}
		}
		return kv, ts
	}
}

func inspectOut(t *testing.T, path string) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, inspect([]string{path}, &out), "inspect reports support, it does not fail on it")
	return out.String()
}

// TestInspectSaysWhetherWeftRunsIt: inspect lists the supported
// architectures and says whether the file's is one of them, or which
// tensor keeps it from lowering; JSON carries the same.
func TestInspectSaysWhetherWeftRunsIt(t *testing.T) {
	stories := filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf")
	archs := strings.Join(model.Architectures(), ", ")
	assert.Contains(t, inspectOut(t, stories), "weft:         supported (weft runs "+archs+")\n")

	mamba := rewritten(t, withArch("mamba"))
	assert.Contains(t, inspectOut(t, mamba),
		`weft:         not supported: weft runs `+archs+` (unsupported architecture "mamba" (supported: `+archs+`))`)

	// The 64×32 K projection stored as 64×16, as a bad conversion writes it.
	bad := rewritten(t, reshaped("blk.3.attn_k.weight", []uint64{64, 16}))
	assert.Contains(t, inspectOut(t, bad),
		`weft:         llama is supported, but this file cannot be lowered: lowering llama: tensor "blk.3.attn_k.weight" has GGUF dims [64 16], want [64 32]`)

	doc := inspectDocOf(t, mamba)
	assert.Equal(t, weftSupport{Architectures: model.Architectures(), Supported: false,
		Error: `unsupported architecture "mamba" (supported: ` + archs + `)`}, doc.Weft)
	assert.Empty(t, inspectDocOf(t, stories).Weft.Error)
}

// TestInspectArchFixtures: every ../shared/models-arch fixture is supported.
func TestInspectArchFixtures(t *testing.T) {
	for _, name := range []string{"synth-qwen2-f32", "synth-phi2-f32", "synth-gemma-f32", "synth-llama3-f32"} {
		doc := inspectDocOf(t, filepath.Join(testenv.Shared(t, "models-arch"), name+".gguf"))
		assert.True(t, doc.Weft.Supported, name)
		assert.Empty(t, doc.Weft.Error, name)
	}
}

// TestCompileRefusalsNameTheProblem: compile fails with the architecture
// or the tensor named.
func TestCompileRefusalsNameTheProblem(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.plan")
	err := runCompile([]string{rewritten(t, withArch("mamba")), "-o", out})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unsupported architecture "mamba" (supported: `+strings.Join(model.Architectures(), ", ")+`)`)

	err = runCompile([]string{rewritten(t, reshaped("blk.3.attn_k.weight", []uint64{64, 16})), "-o", out})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tensor "blk.3.attn_k.weight" has GGUF dims [64 16], want [64 32]`)
}
