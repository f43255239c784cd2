package simd

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// newRand seeds from the clock and logs the seed so a failure can be replayed.
func newRand(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0x5eed))
}

// forEachVariant runs f once per variant this CPU has, pure Go included.
func forEachVariant(t *testing.T, f func(t *testing.T)) {
	for _, name := range Variants() {
		t.Run(name, func(t *testing.T) {
			restore, ok := withVariant(name)
			if !ok {
				t.Fatalf("variant %s listed but not selectable", name)
			}
			defer restore()
			f(t)
		})
	}
}

// randomFloats returns n values of mixed sign and magnitude: a per-block
// scale spread over several decades, so blocks differ in range.
func randomFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	scale := float32(1)
	for i := range x {
		if i%32 == 0 {
			scale = float32(math.Pow(10, r.Float64()*6-3))
		}
		x[i] = float32(r.NormFloat64()) * scale
	}
	return x
}

// quantized returns random values quantized to t with the reference, or
// for the types quant only reads, random blocks.
func quantized(t testing.TB, r *rand.Rand, typ gguf.TensorType, n int) []byte {
	if !quant.Writable(typ) {
		return randomBlocks(r, typ, n)
	}
	b, err := quant.QuantizeAlloc(typ, randomFloats(r, n))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dequant widens a row of type typ to float64 for the error bound.
func dequant(t testing.TB, typ gguf.TensorType, b []byte, n int) []float64 {
	f := make([]float32, n)
	if err := quant.Dequantize(typ, b, f); err != nil {
		t.Fatal(err)
	}
	out := make([]float64, n)
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// dotBound is the largest difference allowed between two float32 dot
// products of w and a that differ only in summation order: each of the
// terms summed (steps of them) may pick up a rounding of 2⁻²⁴ relative to
// Σ|w·a| in each of the two orders, plus a few for scale products and the
// final lane reduction.
func dotBound(w, a []float64, steps int) float64 {
	var abs float64
	for i := range w {
		abs += math.Abs(w[i] * a[i])
	}
	return 2 * float64(steps+8) * math.Ldexp(abs, -24)
}

// nanRow returns n NaNs, the poison every output starts as.
func nanRow(n int) []float32 {
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(math.NaN())
	}
	return d
}

// q6kMagnitude bounds the terms of a Q6_K dot product: kernels sum
// d·sc·q·a with q in [0, 63] and subtract d·sc·32·Σa apart, so each term is
// at most |w| + 2·|d·sc·32|. Zeroing the quants (ql and qh, the first 192
// bytes of a block) dequantizes to -d·sc·32.
func q6kMagnitude(t testing.TB, w []byte, n int) []float64 {
	v := dequant(t, gguf.TypeQ6_K, w, n)
	c := append([]byte(nil), w...)
	bb := int(gguf.TypeQ6_K.BlockBytes())
	for off := 0; off < len(c); off += bb {
		clear(c[off : off+192])
	}
	o := dequant(t, gguf.TypeQ6_K, c, n)
	for i := range v {
		v[i] = math.Abs(v[i]) + 2*math.Abs(o[i])
	}
	return v
}

// magnitude returns per element the size of the terms a dot product with
// this weight row sums. For the offset formats with a separate min
// (Q4_K, Q5_K) the scaled level and the min are summed apart and may cancel, so
// it is |d·sc·q| + |dmin·m|, each found by dequantizing with the other
// scale zeroed; otherwise it is the dequantized value.
func magnitude(t testing.TB, typ gguf.TensorType, w []byte, n int) []float64 {
	if typ == gguf.TypeQ6_K {
		return q6kMagnitude(t, w, n)
	}
	if typ != gguf.TypeQ4_K && typ != gguf.TypeQ5_K {
		return dequant(t, typ, w, n)
	}
	part := func(zeroOff int) []float64 {
		c := append([]byte(nil), w...)
		for off := 0; off < len(c); off += int(typ.BlockBytes()) {
			c[off+zeroOff], c[off+zeroOff+1] = 0, 0
		}
		return dequant(t, typ, c, n)
	}
	scaled, mins := part(2), part(0)
	for i := range scaled {
		scaled[i] = math.Abs(scaled[i]) + math.Abs(mins[i])
	}
	return scaled
}

// randomBlocks returns n values of a lattice type as random bytes (every
// bit pattern is a valid block: all grid entries, signs and scales occur)
// with a binary16 d at the start of each block between 1e-3 and 0.1 (not
// for IQ1_M, whose d lies elsewhere).
func randomBlocks(r *rand.Rand, typ gguf.TensorType, n int) []byte {
	bb := int(typ.BlockBytes())
	b := make([]byte, n/int(typ.BlockSize())*bb)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for off := 0; off < len(b); off += bb {
		binary.LittleEndian.PutUint16(b[off:], quant.FP32ToFP16(float32(r.Float64()*0.1+1e-3)))
	}
	return b
}
