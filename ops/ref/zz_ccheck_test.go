package ref

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

func TestZZCCheck(t *testing.T) {
	b, err := os.ReadFile("/tmp/kcheck/data.bin")
	if err != nil {
		t.Skip(err)
	}
	off := 0
	f := func() float32 { v := math.Float32frombits(binary.LittleEndian.Uint32(b[off:])); off += 4; return v }
	h := func() uint16 { v := binary.LittleEndian.Uint16(b[off:]); off += 2; return v }
	N := 1 << 20
	bad := 0
	for i := 0; i < N; i++ {
		x := f()
		_ = x
	}
	off = 0
	xs := make([]float32, 16)
	for i := 0; i < N; i += 16 {
		for j := range xs {
			xs[j] = f()
		}
		for j := range xs {
			y := f()
			if g := expApprox(xs[j]); math.Float32bits(g) != math.Float32bits(y) {
				if bad < 5 {
					t.Logf("exp(%g): go %g c %g", xs[j], g, y)
				}
				bad++
			}
		}
	}
	t.Logf("expApprox mismatches %d", bad)
	bad = 0
	for i := 0; i < N; i++ {
		a, bb, c, r := f(), f(), f(), f()
		if fma32(a, bb, c) != r {
			bad++
		}
	}
	t.Logf("fma mismatches %d", bad)
	bad = 0
	for i := 0; i < N/16; i++ {
		var v [16]float32
		for j := range v {
			v[j] = f()
		}
		if hsum(&v) != f() {
			bad++
		}
	}
	t.Logf("hsum mismatches %d", bad)
	bad = 0
	for i := 0; i < N/32; i++ {
		var acc [16]float32
		a, bb := make([]float32, 32), make([]float32, 32)
		for j := range acc {
			acc[j] = f()
		}
		for j := range a {
			a[j] = bf16ToFloat(h())
		}
		for j := range bb {
			bb[j] = bf16ToFloat(h())
		}
		dpbf16(&acc, a, bb)
		for j := range acc {
			if acc[j] != f() {
				bad++
			}
		}
	}
	t.Logf("dpbf16 lane mismatches %d", bad)
	bad = 0
	bad2 := 0
	for i := 0; i < N; i++ {
		x := f()
		hh, bh := h(), h()
		if floatToHalf(x) != hh {
			bad++
		}
		if floatToBF16(x) != bh {
			if bad2 < 5 {
				t.Logf("bf16(%g %08x): go %04x c %04x", x, math.Float32bits(x), floatToBF16(x), bh)
			}
			bad2++
		}
	}
	t.Logf("f16 mismatches %d bf16 mismatches %d", bad, bad2)
	var m [5]int
	for i := 0; i < N; i++ {
		x, y, p := f(), f(), f()
		got := [5]float32{expf(y), cosf(x), sinf(x), float32(math.Tanh(float64(y / 4))), powf(10000, p)}
		for k := range m {
			if got[k] != f() {
				m[k]++
			}
		}
	}
	t.Logf("libm mismatches exp cos sin tanh pow: %v of %d", m, N)
}
