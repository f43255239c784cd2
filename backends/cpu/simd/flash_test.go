package simd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// TestFlashMad holds FlashMadF16 and FlashMadF32 to ref.FlashMad bit for
// bit on every variant, for lengths with and without a scalar tail.
func TestFlashMad(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, name := range Variants() {
		restore, _ := withVariant(name)
		for _, n := range []int{8, 32, 64, 96, 128, 200, 256} {
			for _, f16 := range []bool{true, false} {
				acc, x := make([]float32, n), make([]float32, n)
				for i := range acc {
					acc[i] = float32(rng.NormFloat64())
					x[i] = float32(rng.NormFloat64())
					if f16 {
						acc[i] = quant.FP16ToFP32(quant.FP32ToFP16(acc[i]))
						x[i] = quant.FP16ToFP32(quant.FP32ToFP16(x[i]))
					}
				}
				vs := float32(rng.Float64())
				want := append([]float32{}, acc...)
				ref.FlashMad(want, x, vs, f16)
				if f16 {
					xb := make([]byte, 2*n)
					quant.FP32ToFP16Row(x, xb)
					FlashMadF16(acc, xb, vs, make([]float32, n))
				} else {
					FlashMadF32(acc, x, vs)
				}
				for i := range acc {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(acc[i]), "%s n=%d f16=%v element %d", name, n, f16, i)
				}
			}
		}
		restore()
	}
}
