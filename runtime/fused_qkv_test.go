package runtime

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/ops"
)

// fusedQKVPhi2 writes ../shared's Phi-2 fixture with every layer's q, k
// and v projections stored as one attn_qkv tensor (weight and bias), as
// files converted from Phi-2's original HF layout have them, and returns
// its path. The rows are the same numbers, so llama.cpp's references for
// the unfused file hold for it too (llama.cpp multiplies by the fused
// tensor and views the parts: the same dot products).
func fusedQKVPhi2(t *testing.T, dir string) string {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testenv.Shared(t, "models-arch"), "synth-phi2-f32.gguf"))
	require.NoError(t, err)
	defer f.Close()
	var ts []gguf.TensorSpec
	fused := map[string]int{} // name -> index in ts
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		var layer int
		var part, kind string
		if n, _ := fmt.Sscanf(ti.Name, "blk.%d.attn_%1s.%s", &layer, &part, &kind); n == 3 && (part == "q" || part == "k" || part == "v") && (kind == "weight" || kind == "bias") {
			name := fmt.Sprintf("blk.%d.attn_qkv.%s", layer, kind)
			if _, done := fused[name]; done {
				continue
			}
			// q, k, v rows one after another, whatever the file's order
			spec := gguf.TensorSpec{Name: name, Dims: slices.Clone(ti.Dims), Type: ti.Type}
			spec.Dims[len(spec.Dims)-1] = 0
			for _, p := range []string{"q", "k", "v"} {
				pt, ok := f.Tensor(fmt.Sprintf("blk.%d.attn_%s.%s", layer, p, kind))
				require.True(t, ok)
				spec.Dims[len(spec.Dims)-1] += pt.Dims[len(pt.Dims)-1]
				spec.Data = append(spec.Data, f.TensorData(pt)...)
			}
			fused[name] = len(ts)
			ts = append(ts, spec)
			continue
		}
		ts = append(ts, gguf.TensorSpec{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: f.TensorData(ti)})
	}
	require.Len(t, fused, 4, "two layers' fused weights and biases")
	path := filepath.Join(dir, "synth-phi2-f32-qkv.gguf")
	require.NoError(t, gguf.WriteFile(path, f.KV, ts))
	return path
}

// Phi-2 with fused attn_qkv tensors meets llama.cpp's references on the
// CPU and on Vulkan; the parts are views of the fused tensor, which the
// QKV fusion joins into one matmul again.
func TestFusedQKVPhi2(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	path := fusedQKVPhi2(t, t.TempDir())
	refs := filepath.Join(testenv.Shared(t, "reference-arch"))
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			o := Options{Backend: backend, Compile: CompileOptions{Backend: backend}}
			if backend == "vulkan" {
				skipWithoutVulkanDevice(t)
			}
			m, err := Open(path, o)
			require.NoError(t, err)
			views := 0
			for _, n := range m.Plan.Graph.Nodes {
				if n.Op == ops.MatMulQKV {
					for _, id := range n.Inputs[1:] {
						require.Contains(t, m.Plan.Graph.Nodes[id].Tensor, "attn_qkv.weight@rows=")
						views++
					}
				}
			}
			require.Equal(t, 6, views, "q, k and v of both layers as views in one MatMulQKV each")
			require.NoError(t, m.Close())
			checkModelOn(t, path, "synth-phi2-f32", refs, o)
		})
	}
}
