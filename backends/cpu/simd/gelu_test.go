package simd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// TestGELUMatchesReference: on every variant, every binary16 value (so
// every table entry), the ±10 boundaries, NaN, ±Inf and random floats give
// ref.GELU's bits, at lengths that leave tails of every size, also in place.
func TestGELUMatchesReference(t *testing.T) {
	x := make([]float32, 0, 1<<16+1000)
	for h := range 1 << 16 {
		x = append(x, quant.FP16ToFP32(uint16(h)))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		x = append(x, float32(r.NormFloat64()*6))
	}
	x = append(x, -10, 10, math.Nextafter32(-10, 0), math.Nextafter32(10, 0), -1e30, 1e30, 0, float32(math.Copysign(0, -1)),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	want := make([]float32, len(x))
	ref.GELU(want, x)
	forEachVariant(t, func(t *testing.T) {
		for _, n := range []int{len(x), len(x) - 1, 17, 15, 1, 0} {
			got := make([]float32, n)
			for i := range got {
				got[i] = 12345 // poison
			}
			GELU(got, x[:n])
			inPlace := append([]float32(nil), x[:n]...)
			GELU(inPlace, inPlace)
			for i := range got {
				if math.IsNaN(float64(want[i])) {
					require.True(t, math.IsNaN(float64(got[i])) && math.IsNaN(float64(inPlace[i])), "x=%v: got %v (in place %v), want NaN", x[i], got[i], inPlace[i])
					continue
				}
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "n=%d x=%v: got %v, want %v", n, x[i], got[i], want[i])
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(inPlace[i]), "in place, x=%v", x[i])
			}
		}
	})
}

func BenchmarkGELU(b *testing.B) {
	x := make([]float32, 10240)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = float32(r.NormFloat64() * 2)
	}
	dst := make([]float32, len(x))
	b.Run("table", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			GELU(dst, x)
		}
	})
	b.Run("ref", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			ref.GELU(dst, x)
		}
	})
}
