package ref

import (
	"math"
	"math/big"
	"testing"
)

func TestFMA32AgainstBigFloat(t *testing.T) {
	rng := newRNG(t)
	for i := 0; i < 100000; i++ {
		a, b, c := randVec(rng, 3, 4)[0], randVec(rng, 1, 4)[0], randVec(rng, 1, 4)[0]
		if i%2 == 1 {
			c *= float32(math.Ldexp(1, -int(rng.IntN(40)))) // far-apart exponents provoke ties
		}
		exact := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		exact.Mul(exact, new(big.Float).SetFloat64(float64(b)))
		exact.Add(exact, new(big.Float).SetFloat64(float64(c)))
		want, _ := exact.SetMode(big.ToNearestEven).SetPrec(24).Float32()
		if got := fma32(a, b, c); got != want {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
}

func TestFMALanesMatchesFMA32(t *testing.T) {
	rng := newRNG(t)
	for i := 0; i < 20000; i++ {
		a, b := randVec(rng, lanes, 4), randVec(rng, lanes, 4)
		var acc, want [lanes]float32
		for j := range acc {
			acc[j] = randVec(rng, 1, 4)[0] * float32(math.Ldexp(1, -rng.IntN(40)))
			want[j] = fma32(a[j], b[j], acc[j])
		}
		fmaLanes(&acc, a, b)
		if acc != want {
			t.Fatalf("fmaLanes %v, want %v", acc, want)
		}
	}
}

func TestHsumOrder(t *testing.T) {
	rng := newRNG(t)
	var v [lanes]float32
	copy(v[:], randVec(rng, lanes, 1000))
	// the reduction tree written out independently
	l1 := make([]float32, 8)
	for i := range l1 {
		l1[i] = v[i+8] + v[i]
	}
	l2 := []float32{l1[4] + l1[0], l1[5] + l1[1], l1[6] + l1[2], l1[7] + l1[3]}
	want := (l2[2] + l2[0]) + (l2[3] + l2[1])
	if got := hsum(&v); got != want {
		t.Fatalf("hsum = %g, want %g", got, want)
	}
}

func TestExpApprox(t *testing.T) {
	rng := newRNG(t)
	for i := 0; i < 200000; i++ {
		x := rng.Float32()*190 - 103
		want := math.Exp(float64(x))
		got := expApprox(x)
		if want < 0x1p-126 { // subnormal results: absolute error
			if math.Abs(float64(got)-want) > 0x1p-148 {
				t.Fatalf("exp(%g) = %g, want %g", x, got, want)
			}
			continue
		}
		if d := math.Abs(float64(got)-want) / ulp32(want); d > 2.5 { // ggml documents 1.45 ulp plus rounding
			t.Fatalf("exp(%g) = %g, want %g (%.2f ulp)", x, got, want, d)
		}
	}
	for _, c := range []struct{ x, want float32 }{
		{float32(math.Inf(-1)), 0}, {-200, 0}, {0, 1}, {float32(math.Inf(1)), float32(math.Inf(1))}, {100, float32(math.Inf(1))},
	} {
		if got := expApprox(c.x); got != c.want {
			t.Errorf("exp(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if got := expApprox(float32(math.NaN())); got == got {
		t.Errorf("exp(NaN) = %g", got)
	}
}
