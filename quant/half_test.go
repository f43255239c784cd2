package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fp16Oracle decodes binary16 with float64 arithmetic.
func fp16Oracle(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(mant, -24)
	case 31:
		if mant == 0 {
			return math.Copysign(math.Inf(1), sign)
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1024+mant, exp-25)
}

func TestFP16ToFP32AllValues(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got, want := FP16ToFP32(uint16(h)), fp16Oracle(uint16(h))
		if math.IsNaN(want) {
			bits := math.Float32bits(got)
			if !math.IsNaN(float64(got)) || bits&0x400000 == 0 || uint16(bits>>16)&0x8000 != uint16(h)&0x8000 {
				t.Fatalf("%#04x: got %#08x, want a quiet NaN with the same sign", h, bits)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != (h&0x8000 != 0) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
	}
}

// checkNearestEven verifies that h is the binary16 value nearest to f, ties
// going to the even code, overflow to infinity.
func checkNearestEven(t *testing.T, f float32, h uint16) {
	t.Helper()
	x := float64(f)
	if math.Abs(x) >= 65520 {
		if h&0x7fff != 0x7c00 {
			t.Fatalf("%g: got %#04x, want infinity", f, h)
		}
		return
	}
	err := math.Abs(fp16Oracle(h) - x)
	for _, n := range []uint16{h - 1, h + 1} {
		if n&0x7c00 == 0x7c00 || (n^h)&0x8000 != 0 {
			continue // infinity/NaN or crossed the sign: not a rival
		}
		e := math.Abs(fp16Oracle(n) - x)
		if e < err || (e == err && h&1 == 1) {
			t.Fatalf("%g (%#08x): got %#04x, but %#04x is nearer or the even tie", f, math.Float32bits(f), h, n)
		}
	}
	if h&0x7fff == 0 && x != 0 && math.Abs(x) > math.Ldexp(1, -25) {
		t.Fatalf("%g: rounded to zero", f)
	}
}

func TestFP32ToFP16(t *testing.T) {
	edges := []float32{0, 1, -2, 65504, 65519.99, 65520, -70000, 6.1e-5, 5.96e-8, 2.98e-8, 2.9802326e-8, 2.9802325e-8,
		1.0 + 1.0/2048, 1.0 + 3.0/2048, float32(math.Ldexp(1, -24)) * 1.5, float32(math.Ldexp(1, -24)) * 2.5}
	for _, f := range edges {
		checkNearestEven(t, f, FP32ToFP16(f))
	}
	r := rand.New(rand.NewPCG(1, uint64(rand.Int64())))
	for i := 0; i < 200000; i++ {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		f = float32(math.Ldexp(float64(f), -int(r.IntN(40)))) // bring many into f16 range
		checkNearestEven(t, f, FP32ToFP16(f))
	}
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue
		}
		if got := FP32ToFP16(FP16ToFP32(uint16(h))); got != uint16(h) {
			t.Fatalf("round trip %#04x -> %#04x", h, got)
		}
	}
	if got := FP32ToFP16(float32(math.Inf(-1))); got != 0xfc00 {
		t.Errorf("-Inf: got %#04x", got)
	}
	// Payload 0x012345 keeps its top ten bits (0x009) and gains the quiet bit.
	if got := FP32ToFP16(math.Float32frombits(0xff812345)); got != 0xfe09 {
		t.Errorf("NaN: got %#04x, want quiet with the top payload bits", got)
	}
}

func TestBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(2, uint64(rand.Int64())))
	for i := 0; i < 200000; i++ {
		f := math.Float32frombits(r.Uint32())
		h := FP32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToFP32(h))) || h&0x40 == 0 {
				t.Fatalf("NaN %#08x gave %#04x, want a quiet NaN", math.Float32bits(f), h)
			}
			continue
		}
		// Oracle: the nearest of the two truncations, ties to even, in float64.
		down := math.Float32bits(f) &^ 0xffff
		up := down + 0x10000
		dd := math.Abs(float64(f) - float64(math.Float32frombits(down)))
		upVal := float64(math.Float32frombits(up))
		if math.IsInf(upVal, 0) {
			upVal = math.Copysign(math.Ldexp(1, 128), upVal) // the next step past the largest finite value
		}
		du := math.Abs(float64(f) - upVal)
		want := uint16(down >> 16)
		if du < dd || (du == dd && want&1 == 1) {
			want = uint16(up >> 16)
		}
		if math.Float32bits(f)&0xffff == 0 {
			want = uint16(down >> 16)
		}
		if h != want {
			t.Fatalf("%g (%#08x): got %#04x want %#04x", f, math.Float32bits(f), h, want)
		}
		if got := FP32ToBF16(BF16ToFP32(h)); got != h {
			t.Fatalf("round trip %#04x -> %#04x", h, got)
		}
	}
}
