package ref

import (
	"math"
	"testing"
)

func TestHalfRoundTripExhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := halfToFloat(uint16(h))
		if f != f {
			if back := floatToHalf(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %04x came back as %04x", h, back)
			}
			continue
		}
		if back := floatToHalf(f); back != uint16(h) {
			t.Fatalf("%04x -> %g -> %04x", h, f, back)
		}
	}
}

// nearestHalf finds the binary16 value nearest to x (ties to even) by
// searching the sorted positive values: an independent rounding.
func nearestHalf(x float64) float64 {
	a := math.Abs(x)
	lo, hi := 0, 0x7c00 // [0, inf]
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if float64(halfToFloat(uint16(mid))) <= a {
			lo = mid
		} else {
			hi = mid
		}
	}
	vlo, vhi := float64(halfToFloat(uint16(lo))), float64(halfToFloat(uint16(hi)))
	if hi == 0x7c00 {
		vhi = 65536 // rounding boundary above the largest finite value
	}
	r := vlo
	if d1, d2 := a-vlo, vhi-a; d2 < d1 || (d2 == d1 && hi%2 == 0) {
		r = float64(halfToFloat(uint16(hi)))
	}
	return math.Copysign(r, x)
}

func TestFloatToHalfRandom(t *testing.T) {
	rng := newRNG(t)
	for i := 0; i < 200000; i++ {
		x := math.Float32frombits(rng.Uint32())
		if x != x {
			continue
		}
		if math.Abs(float64(x)) > 1e6 && i%2 == 0 {
			x = float32(rng.NormFloat64() * 1000)
		}
		got := float64(halfToFloat(floatToHalf(x)))
		if want := nearestHalf(float64(x)); got != want && !(math.IsInf(got, 0) && math.IsInf(want, 0)) {
			t.Fatalf("round(%g) = %g, want %g", x, got, want)
		}
	}
}

func TestBF16Random(t *testing.T) {
	rng := newRNG(t)
	for i := 0; i < 200000; i++ {
		x := float32(rng.NormFloat64() * math.Exp(rng.Float64()*40-20))
		got := float64(roundBF16(x))
		// neighbours of x's truncation; the nearer one wins, ties to even
		b := math.Float32bits(x) &^ 0xffff
		lo, hi := float64(math.Float32frombits(b)), float64(math.Float32frombits(b+0x10000))
		want := lo
		if d1, d2 := math.Abs(float64(x)-lo), math.Abs(hi-float64(x)); d2 < d1 || (d2 == d1 && (b>>16)&1 == 1) {
			want = hi
		}
		if got != want {
			t.Fatalf("bf16(%g) = %g, want %g", x, got, want)
		}
	}
}
