package ops

import (
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops/ref"
)

// RoPEOf is the rotation a RoPE node's attributes describe, with the
// values of its frequency-factor operand when it has one (nil
// otherwise). Every backend builds its angles from it, so they agree on
// what the attributes mean.
func RoPEOf(a graph.Attrs, factors []float32) ref.RoPE {
	return ref.RoPE{
		Dims: a.Int("dims"), Base: a.Float("base"), FreqScale: a.Float("freq_scale"), NeoX: a.Bool("neox"),
		Factors:   factors,
		ExtFactor: a.Float("ext_factor"), AttnFactor: a.Float("attn_factor"),
		CorrDims: [2]float32{a.Float("corr_lo"), a.Float("corr_hi")},
	}
}
