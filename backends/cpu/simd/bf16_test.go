package simd

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// The BF16 kernels promise more than quant's bound: the bits of ggml's
// AVX512-BF16 summation order (see codegen/cmd/simdgen/dot_bf16.go). The
// models below spell that order out in Go.

// bf16At widens element i of a little-endian bfloat16 row.
func bf16At(b []byte, i int) float32 {
	return quant.BF16ToFP32(binary.LittleEndian.Uint16(b[2*i:]))
}

// bf16Lanes adds the products of elements [base, base+2·len(acc)) into acc
// as VDPBF16PS does: lane j takes element 2j+1's product, then 2j's, each
// add rounded once (bf16Step); flush as VDPBF16PS flushes.
func bf16Lanes(acc []float32, w, a []byte, base int, flush bool) {
	for j := range acc {
		o, e := base+2*j+1, base+2*j
		acc[j] = bf16Step(acc[j], bf16At(w, o), bf16At(a, o), flush)
		acc[j] = bf16Step(acc[j], bf16At(w, e), bf16At(a, e), flush)
	}
}

// bf16Step is acc + w·a rounded once to nearest even, as an FMA gives it.
// (The product of two bfloat16 values is exact in float64, and so is its
// sum with a float32 unless their bits lie too far apart to reach a
// float32 rounding boundary: one rounding in all.) With flush it is a step
// of VDPBF16PS as measured on AMD Zen 5 and written in Intel's pseudocode:
// denormal inputs, acc included, read as zeros of their sign, and a
// result that rounds to a denormal becomes a zero of its sign.
func bf16Step(acc, w, a float32, flush bool) float32 {
	if flush {
		acc, w, a = flushDenormal(acc), flushDenormal(w), flushDenormal(a)
	}
	s := float32(math.FMA(float64(w), float64(a), float64(acc)))
	if flush {
		s = flushDenormal(s)
	}
	return s
}

// flushDenormal returns a zero of x's sign for a denormal x, else x.
func flushDenormal(x float32) float32 {
	if b := math.Float32bits(x); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return x
}

// reduceLanes sums 8 or 16 lanes as _mm512_reduce_add_ps (and the hsum of
// eight lanes) does: halves folded onto each other down to four lanes,
// then lanes (0+2)+(1+3).
func reduceLanes(acc []float32) float32 {
	x := append([]float32(nil), acc...)
	for len(x) > 4 {
		h := len(x) / 2
		for i := range h {
			x[i] = x[i] + x[i+h]
		}
		x = x[:h]
	}
	return (x[0] + x[2]) + (x[1] + x[3])
}

// bf16DotModel is ggml_vec_dot_bf16's AVX512-BF16 order: whole blocks of
// 64 in two 16-lane accumulators (values 0–31 and 32–63 of each block),
// whose sums and then the tail's products are added in float64.
func bf16DotModel(n int, w, a []byte) float32 {
	var c1, c2 [16]float32
	nb := n / 64
	for b := range nb {
		bf16Lanes(c1[:], w, a, 64*b, false)
		bf16Lanes(c2[:], w, a, 64*b+32, false)
	}
	s := float64(reduceLanes(c1[:])) + float64(reduceLanes(c2[:]))
	for i := 64 * nb; i < n; i++ {
		s += float64(bf16At(w, i) * bf16At(a, i))
	}
	return float32(s)
}

// bf16TileModel is one (row, token) sum of a GEMM tile: one accumulator
// of lanes lanes over chunks of 2·lanes values (tinyBLAS's order for 16);
// flush for the VDPBF16PS tiles.
func bf16TileModel(lanes, n int, w, a []byte, flush bool) float32 {
	acc := make([]float32, lanes)
	for base := 0; base < n; base += 2 * lanes {
		bf16Lanes(acc, w, a, base, flush)
	}
	return reduceLanes(acc)
}

// bf16TileLanes is the accumulator width of the active variant's tiles:
// 16 on every variant (AVX2 keeps the 16 lanes in two ymm).
func bf16TileLanes(t *testing.T) int {
	switch Variant() {
	case "avx2", "avx512vnni":
		return 16
	}
	t.Fatalf("variant %s has no BF16 tiles", Variant())
	return 0
}

// TestBF16DotOrder holds the dot kernel to the model bit for bit on random
// rows of awkward lengths (tails included), and the model to quant's
// serial sum within the summation-order bound.
func TestBF16DotOrder(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, n := range []int{1, 63, 64, 65, 96, 200, 1024, 2048, 5632, 4096 + 7} {
			w, a := quantized(t, r, gguf.TypeBF16, n), quantized(t, r, gguf.TypeBF16, n)
			want := bf16DotModel(n, w, a)
			ref := quant.VecDot(gguf.TypeBF16, n, w, a)
			bound := dotBound(dequant(t, gguf.TypeBF16, w, n), dequant(t, gguf.TypeBF16, a, n), n)
			require.LessOrEqual(t, math.Abs(float64(want-ref)), bound, "n=%d: model %g, quant %g", n, want, ref)
			got := VecDot(gguf.TypeBF16)(n, w, a)
			if Variant() == pureGo {
				want = ref
			}
			require.Equal(t, math.Float32bits(want), math.Float32bits(got), "n=%d: got %g, want %g", n, got, want)
		}
	})
}

// TestQuantizeBF16 checks the narrowing kernel against quant.FP32ToBF16 on
// random rows and on ties, overflow, subnormals, infinities and NaNs.
func TestQuantizeBF16(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, n := range []int{8, 16, 24, 2048, 5632, 13} {
			checkQuantize(t, gguf.TypeBF16, randomFloats(r, n), "random bf16")
		}
		special := []float32{
			math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), // ties to even, down and up
			math.Float32frombits(0x7f7fffff), -math.Float32frombits(0x7f7f8000), // round to ±infinity
			math.Float32frombits(0x00008000), math.Float32frombits(0x00018001), // subnormals
			float32(math.Inf(1)), float32(math.Inf(-1)),
			float32(math.NaN()), math.Float32frombits(0xff800001), math.Float32frombits(0x7fffffff), 0,
			float32(math.Copysign(0, -1)), 1, -2.5, 3e38, 1e-40, 7,
			math.Float32frombits(0xbf7f8000), 5, 6, 8, 9, 10, // to 24, whole chunks of 8
		}
		// Whole chunks only: a ragged row goes to quant as a whole.
		require.Zero(t, len(special)%8)
		checkQuantize(t, gguf.TypeBF16, special, "special bf16")
	})
}

// TestBF16KernelsPresent guards against a table that loses the BF16
// kernels, which every test above would pass through the fallback.
func TestBF16KernelsPresent(t *testing.T) {
	for _, v := range available[1:] {
		for what, ok := range map[string]bool{
			"dot":   v.dots[gguf.TypeBF16] != nil,
			"gemm":  v.gemms[gguf.TypeBF16] != nil,
			"quant": v.quants[gguf.TypeBF16] != nil,
		} {
			require.True(t, ok, "variant %s has no BF16 %s kernel", v.name, what)
		}
	}
}
