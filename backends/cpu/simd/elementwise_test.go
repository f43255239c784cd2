package simd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-ml/weft/ops/ref"
)

// expInputs returns n values that exercise every branch of the vector
// exponential: ordinary magnitudes, the subnormal and overflow edges
// (|x| near 87–104 and beyond 133, where n passes ±192), infinities and
// NaN.
func expInputs(r *rand.Rand, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 88.7, 88.8, -87.3, -103.9, -104.1, -126, -150, 133.5, -134, 200, -200,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, -1e-30, 3e38, -3e38}
	x := make([]float32, n)
	for i := range x {
		switch k := r.IntN(10); {
		case k == 0:
			x[i] = special[r.IntN(len(special))]
		case k < 3:
			x[i] = float32(r.NormFloat64() * 60)
		default:
			x[i] = float32(r.NormFloat64() * 4)
		}
	}
	return x
}

// sameBits reports whether a and b are equal bit for bit (any NaN
// matches any NaN: the vector unit's NaN payloads are not specified).
func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

var expSizes = []int{0, 1, 15, 16, 17, 31, 32, 48, 100, 5632 + 7}

func TestSiLUMatchesReference(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		r := newRand(t)
		for _, n := range expSizes {
			x := expInputs(r, n)
			want := make([]float32, n)
			ref.SiLU(want, x)
			got := make([]float32, n)
			SiLU(got, x)
			inPlace := append([]float32(nil), x...)
			SiLU(inPlace, inPlace)
			for i := range want {
				if !sameBits(got[i], want[i]) || !sameBits(inPlace[i], want[i]) {
					t.Fatalf("n=%d: silu(%g)[%d] = %g (in place %g), reference %g", n, x[i], i, got[i], inPlace[i], want[i])
				}
			}
		}
	})
}

func TestSoftmaxRowMatchesReference(t *testing.T) {
	forEachVariant(t, func(t *testing.T) {
		r := newRand(t)
		for _, n := range expSizes[1:] {
			for _, scale := range []float32{1, 0.125, 7.3} {
				x := expInputs(r, n)
				if r.IntN(4) != 0 { // mostly rows of scores and -Inf masks; some with NaN and +Inf
					for i := range x {
						if x[i] != x[i] || math.IsInf(float64(x[i]), 1) {
							x[i] = 1
						}
					}
				}
				x[r.IntN(n)] = float32(r.NormFloat64()) // at least one finite entry
				want := append([]float32(nil), x...)
				ref.SoftmaxRow(want, scale)
				got := append([]float32(nil), x...)
				SoftmaxRow(got, scale)
				for i := range want {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("n=%d scale=%g: softmax[%d] of %g = %g, reference %g", n, scale, i, x[i], got[i], want[i])
					}
				}
			}
		}
	})
}

func TestMulAddMatchReference(t *testing.T) {
	ops := []struct {
		name     string
		got, ref func(dst, a, b []float32)
	}{{"mul", Mul, ref.Mul}, {"add", Add, ref.Add}}
	forEachVariant(t, func(t *testing.T) {
		r := newRand(t)
		for _, op := range ops {
			for _, n := range []int{1, 7, 8, 16, 17, 33, 2048 + 5} {
				for _, rows := range []int{1, 3} {
					a, b := expInputs(r, n*rows), expInputs(r, n)
					want := make([]float32, n*rows)
					op.ref(want, a, b)
					got := make([]float32, n*rows)
					op.got(got, a, b)
					inPlace := append([]float32(nil), a...)
					op.got(inPlace, inPlace, b)
					for i := range want {
						if !sameBits(got[i], want[i]) || !sameBits(inPlace[i], want[i]) {
							t.Fatalf("%s n=%d rows=%d: [%d] = %g (in place %g), reference %g", op.name, n, rows, i, got[i], inPlace[i], want[i])
						}
					}
				}
			}
		}
	})
}

// TestSiLUSweepsExponentRange runs SiLU over a fine sweep of [−150, 150],
// where the exponential's result passes from normal to subnormal, to
// zero, and to overflow (the AVX2 kernel's rescaling paths), and over the
// neighbours of each boundary, against the reference bit for bit.
func TestSiLUSweepsExponentRange(t *testing.T) {
	var x []float32
	for v := -150.0; v <= 150; v += 1.0 / 64 {
		x = append(x, float32(v))
	}
	for _, n := range []float64{-192.5, -125.5, 127.5, 192.5} {
		edge := float32(-n / math.Log2E) // SiLU takes exp(−x)
		for _, d := range []float32{-1e-4, 0, 1e-4} {
			x = append(x, edge+d, math.Nextafter32(edge+d, 0), math.Nextafter32(edge+d, 200))
		}
	}
	for len(x)%expGroup != 0 {
		x = append(x, 0)
	}
	want := make([]float32, len(x))
	ref.SiLU(want, x)
	forEachVariant(t, func(t *testing.T) {
		got := make([]float32, len(x))
		SiLU(got, x)
		for i := range want {
			if !sameBits(got[i], want[i]) {
				t.Fatalf("silu(%g) = %g, reference %g", x[i], got[i], want[i])
			}
		}
	})
}
