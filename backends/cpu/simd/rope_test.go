package simd

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/ops/ref"
)

// TestRoPERotateMatchesReference: on every variant, RoPETable then
// RoPERotate give ref.RoPE.Apply's bits for adjacent and NeoX pairs,
// whole vectors and not (the reference's fallback), partial rotations
// (Dims < headDim), per-pair factors, YaRN, the unfused arithmetic, and
// positions near 0 and far out, on random heads of mixed magnitudes.
func TestRoPERotateMatchesReference(t *testing.T) {
	r := newRand(t)
	type shape struct{ dims, headDim, heads int }
	shapes := []shape{{64, 64, 32}, {128, 128, 3}, {32, 80, 5}, {256, 256, 1}, {16, 16, 7}, {48, 64, 2}, {80, 80, 3}, {8, 24, 9}, {2, 2, 1}}
	forEachVariant(t, func(t *testing.T) {
		for _, sh := range shapes {
			for _, neox := range []bool{false, true} {
				for _, style := range []string{"plain", "factors", "yarn", "unfused"} {
					rope := ref.RoPE{Dims: sh.dims, Base: 10000, FreqScale: 1, NeoX: neox}
					switch style {
					case "factors":
						rope.Factors = make([]float32, sh.dims/2)
						for i := range rope.Factors {
							rope.Factors[i] = 1 + 7*r.Float32()
						}
					case "yarn":
						rope.Base, rope.FreqScale, rope.ExtFactor, rope.AttnFactor = 500000, 0.25, 1, 1.1
						rope.CorrDims = ref.YaRNCorrDims(sh.dims, 8192, rope.Base, 32, 1)
					case "unfused":
						rope.Unfused = true
					}
					for _, pos := range []int32{0, 1, int32(r.IntN(5000)), 1<<20 + int32(r.IntN(1000))} {
						name := fmt.Sprintf("dims=%d headDim=%d heads=%d neox=%v %s pos=%d", sh.dims, sh.headDim, sh.heads, neox, style, pos)
						x := randomFloats(r, sh.heads*sh.headDim)
						want := append([]float32(nil), x...)
						rope.Apply(want, sh.heads, sh.headDim, pos)
						tab := make([]float32, sh.dims)
						RoPETable(rope, pos, tab)
						got := append([]float32(nil), x...)
						RoPERotate(rope, got, sh.heads, sh.headDim, tab)
						for i := range want {
							require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s: element %d: got %v, want %v", name, i, got[i], want[i])
						}
					}
				}
			}
		}
	})
}

// TestRoPERotateBounds: a short head buffer or table panics in Go, before
// a kernel could read past it.
func TestRoPERotateBounds(t *testing.T) {
	rope := ref.RoPE{Dims: 64, Base: 10000, FreqScale: 1}
	tab := make([]float32, 64)
	RoPETable(rope, 3, tab)
	require.Panics(t, func() { RoPERotate(rope, make([]float32, 64*4-1), 4, 64, tab) })
	require.Panics(t, func() { RoPERotate(rope, make([]float32, 64*4), 4, 64, tab[:63:63]) })
}

func BenchmarkRoPERotate(b *testing.B) {
	for _, neox := range []bool{false, true} {
		rope := ref.RoPE{Dims: 64, Base: 10000, FreqScale: 1, NeoX: neox}
		tab := make([]float32, 64)
		RoPETable(rope, 4100, tab)
		x := randomFloats(newRand(b), 32*64)
		b.Run(fmt.Sprintf("neox=%v", neox), func(b *testing.B) {
			benchVariants(b, func(b *testing.B) {
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					RoPERotate(rope, x, 32, 64, tab)
				}
			})
		})
	}
}
