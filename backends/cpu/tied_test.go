package cpu

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model/synth"
)

// TestPackedTiedEmbedding: a Q8_0 token table that is also the output
// projection (tied, as in Qwen2.5-0.5B; llama-quantize gives the tied
// table Q8_0 in Q4_0 and Q8_0 files of these widths) is repacked for the
// output matmul, and its lookups read the packed rows
// (simd.PackedGetRows, whose Q4_0 path its own test covers): the logits
// match the GGUF-layout run to float rounding of the summation order.
func TestPackedTiedEmbedding(t *testing.T) {
	vocab, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	defer vocab.Close()
	for _, typ := range []string{"q4_0", "q8_0"} {
		t.Run(typ, func(t *testing.T) {
			ft, err := synth.ParseFileType(typ)
			require.NoError(t, err)
			if !simd.HasPackedKernels(ft.Base) {
				t.Skip("this CPU has no packed kernels: nothing is repacked")
			}
			var buf bytes.Buffer
			shape := synth.Shape{Dim: 64, FFN: 128, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 64, Tied: true}
			require.NoError(t, synth.Write(&buf, synth.Options{Shape: shape, Type: ft, Seed: 5, Vocab: vocab}))
			f, err := gguf.Parse(buf.Bytes())
			require.NoError(t, err)
			plain, _ := compileSynth(t, f, false)
			packed, side := compileSynth(t, f, true)
			var table *int
			for _, n := range packed.Nodes {
				if n.Tensor == "token_embd.weight" {
					require.Equal(t, gguf.TypeQ8_0, n.Type.DType)
					require.NotNil(t, n.Layout, "the tied token table was not repacked")
					table = &n.ID
				}
			}
			require.NotNil(t, table)
			seed := rand.Uint64()
			want, got := runTied(t, plain, f, nil, seed), runTied(t, packed, f, side, seed)
			for b := range want {
				closeLogits(t, b, got[b], want[b])
			}
		})
	}
}

// runTied is runBatches for a 512-token vocabulary.
func runTied(t *testing.T, g *graph.Graph, f *gguf.File, side []byte, seed uint64) [][]float32 {
	t.Helper()
	p, err := Compile(g, f, Options{MaxTokens: 9, Threads: 3, Packed: side})
	require.NoError(t, err)
	return runProgramWith(t, p, rand.New(rand.NewPCG(seed, 11)))
}
