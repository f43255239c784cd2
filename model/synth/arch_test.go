package synth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/model"
	"github.com/weft-ml/weft/quant"
)

// TestArchShapesLower writes small qwen2 and phi2 models (and a tied
// llama) and lowers them: the tensors synth writes are the ones the
// architectures declare, with their shapes, and the keys give the
// intended hyperparameters.
func TestArchShapesLower(t *testing.T) {
	cases := []struct {
		shape Shape
		want  model.Params
		n     int // tensors
	}{
		{Shape{Arch: "qwen2", Dim: 64, FFN: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 256, Tied: true},
			model.Params{Arch: "qwen2", VocabSize: 512, Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 96, CtxTrain: 256, NormEps: 1e-6, RopeBase: 1e6, RopeFreqScale: 1, RopeDims: 16},
			2 + 12*2},
		{Shape{Arch: "phi2", Dim: 64, FFN: 128, Layers: 2, Heads: 2, KVHeads: 2, Vocab: 512, Ctx: 256, RopeDims: 8},
			model.Params{Arch: "phi2", VocabSize: 512, Embd: 64, Layers: 2, Heads: 2, KVHeads: 2, HeadDim: 32, FFN: 128, CtxTrain: 256, NormEps: 1e-5, RopeBase: 10000, RopeFreqScale: 1, RopeDims: 8},
			5 + 14*2},
		{Shape{Dim: 64, FFN: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 256, Tied: true},
			model.Params{Arch: "llama", VocabSize: 512, Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 96, CtxTrain: 256, NormEps: 1e-5, RopeBase: 10000, RopeFreqScale: 1, RopeDims: 16},
			2 + 9*2},
	}
	for _, c := range cases {
		t.Run(c.want.Arch, func(t *testing.T) {
			f := parseT(t, synthBytes(t, c.shape, "q8_0", 3, 2))
			assert.Len(t, f.Tensors, c.n)
			l, err := model.Lower(f)
			require.NoError(t, err)
			assert.Equal(t, c.want, l.Params)
			for _, ti := range f.Tensors {
				if len(ti.Dims) != 1 {
					continue
				}
				vals := make([]float32, ti.Dims[0])
				require.NoError(t, quantDequant(f, &ti, vals))
				if strings.HasSuffix(ti.Name, ".bias") {
					assert.NotEqual(t, vals[0], vals[1], "%s: biases are random", ti.Name)
				} else {
					assert.Equal(t, float32(1), vals[0], "%s: norm weights are ones", ti.Name)
				}
			}
		})
	}
}

// quantDequant reads an F32 vector tensor.
func quantDequant(f *gguf.File, ti *gguf.TensorInfo, dst []float32) error {
	return quant.Dequantize(ti.Type, f.TensorData(ti), dst)
}

func TestArchShapeErrors(t *testing.T) {
	base := Shape{Dim: 64, FFN: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 256}
	for _, c := range []struct {
		edit func(*Shape)
		want string
	}{
		{func(s *Shape) { s.Arch = "mamba" }, `synth writes no "mamba" models`},
		{func(s *Shape) { s.Arch, s.Tied = "phi2", true }, "phi2 models always have an output.weight"},
		{func(s *Shape) { s.RopeDims = 8 }, "rotated dims 8"},
		{func(s *Shape) { s.Arch, s.RopeDims = "phi2", 7 }, "rotated dims 7"},
	} {
		s := base
		c.edit(&s)
		assert.ErrorContains(t, s.Validate(), c.want)
	}
	for _, name := range []string{"qwen2-0.5b", "phi2"} {
		s, err := LookupShape(name)
		require.NoError(t, err)
		assert.NoError(t, s.Validate(), name)
	}
}
