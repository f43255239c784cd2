package simd

import (
	"encoding/binary"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// The F16 kernels promise more than quant's bound: the bits of a fixed
// summation order. On AVX-512 those are llama.cpp's AVX-512 orders (see
// codegen/cmd/simdgen dot_f16_zmm.go and gemm_f16.go); the AVX2 tiles keep
// tinyBLAS<8>'s. The models below spell the orders out in Go.

// f16At widens element i of a little-endian binary16 row.
func f16At(b []byte, i int) float32 {
	return quant.FP16ToFP32(binary.LittleEndian.Uint16(b[2*i:]))
}

// f16TileModel is one (row, token) sum of the F16 GEMM tiles: one
// accumulator of lanes lanes, lane j taking values j, j+lanes, … in order
// by FMA (the product of two binary16 values is exact in float32, so Go's
// rounded add is the FMA's single rounding), reduced as storeGrid (eight
// lanes) or _mm512_reduce_add_ps (sixteen) reduces: tinyBLAS's order.
func f16TileModel(lanes, n int, w, a []byte) float32 {
	acc := make([]float32, lanes)
	for i := range n {
		acc[i%lanes] += f16At(w, i) * f16At(a, i)
	}
	return reduceLanes(acc)
}

// f16DotModel is ggml_vec_dot_f16's AVX-512 order: whole blocks of 64 in
// four 16-lane accumulators (accumulator j takes values 16j…16j+15 of each
// block), folded (0+2)+(1+3) and reduced as _mm512_reduce_add_ps, then
// the tail's products added in float64.
func f16DotModel(n int, w, a []byte) float32 {
	var acc [4][16]float32
	nb := n / 64
	for b := range nb {
		for j := range acc {
			for l := range acc[j] {
				i := 64*b + 16*j + l
				acc[j][l] += f16At(w, i) * f16At(a, i)
			}
		}
	}
	var v [16]float32
	for l := range v {
		v[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	s := float64(reduceLanes(v[:]))
	for i := 64 * nb; i < n; i++ {
		s += float64(f16At(w, i) * f16At(a, i))
	}
	return float32(s)
}

// f16Lanes is the accumulator width of the active variant's F16 tiles; 0
// for pure Go, which has none.
func f16Lanes() int {
	switch Variant() {
	case "avx2":
		return 8
	case "avx512vnni":
		return 16
	}
	return 0
}

// f16Lengths are awkward row lengths: below, at and past the 64-value
// blocks, 16-value chunks and the wide GEMM's 512-value k-blocks
// (stories260K's 172 among them).
var f16Lengths = []int{1, 8, 15, 16, 63, 64, 65, 100, 172, 200, 1024, 2048 + 48, 5632, 4096 + 7}

// TestF16DotOrder holds the AVX-512 dot kernel (VecDot, VecDotRows, which
// loops over it) and DecodeRows (decode_amd64.go's kernel, the dot's
// order) to ggml_vec_dot_f16's order bit for bit,
// and the model to quant's serial sum within the summation-order bound.
// (AVX2's multi-row kernel sums in another order than its dot kernel.)
func TestF16DotOrder(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, n := range f16Lengths {
			const rows = 5
			wb := 2 * n
			w := make([]byte, 0, rows*wb)
			for range rows {
				w = append(w, quantized(t, r, gguf.TypeF16, n)...)
			}
			a := quantized(t, r, gguf.TypeF16, n)
			got, dec := make([]float32, rows), make([]float32, rows)
			VecDotRows(gguf.TypeF16)(n, w, wb, rows, a, got)
			DecodeRows(gguf.TypeF16)(n, w, wb, rows, a, dec)
			for i := range rows {
				wr := w[i*wb : (i+1)*wb]
				want := f16DotModel(n, wr, a)
				serial := quant.VecDot(gguf.TypeF16, n, wr, a)
				bound := dotBound(dequant(t, gguf.TypeF16, wr, n), dequant(t, gguf.TypeF16, a, n), n)
				require.LessOrEqual(t, math.Abs(float64(want-serial)), bound, "n=%d: model %g, quant %g", n, want, serial)
				one := VecDot(gguf.TypeF16)(n, wr, a)
				require.Equal(t, math.Float32bits(one), math.Float32bits(dec[i]), "n=%d row %d: DecodeRows %g, VecDot %g", n, i, dec[i], one)
				if f16Lanes() == 16 {
					require.Equal(t, math.Float32bits(want), math.Float32bits(one), "n=%d row %d: got %g, want %g", n, i, one, want)
					require.Equal(t, math.Float32bits(want), math.Float32bits(got[i]), "n=%d row %d: VecDotRows %g, want %g", n, i, got[i], want)
				}
			}
		}
	})
}

// TestF16GemmOrder holds every F16 GEMM output to the tile model bit for
// bit where the tiles take it (whole groups of four rows, lengths in whole
// 16-value chunks), on shapes that reach the small tiles and the wide
// AVX-512 path (several k-blocks, row blocks and token groups, odd token
// counts, more tokens than one super-block), and to the dot kernel (on
// AVX-512 its model) for the leftover rows and, on AVX-512, other lengths.
func TestF16GemmOrder(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		lanes := f16Lanes()
		if lanes == 0 {
			t.Skip("no tiles")
		}
		shapes := append([][2]int{{36, 30}, {8, 197}, {33, 12}, {4, 11}, {40, 13}}, gemmShapes...)
		for _, n := range []int{16, 80, 172, 256, 272, 16 * 41, 2048} {
			for _, s := range shapes {
				c := newGemmCase(t, r, gguf.TypeF16, n, s[0], s[1])
				c.run()
				for i := range c.nRows {
					for j := range c.nTok {
						var want float32
						switch {
						case n%16 == 0 && i < c.nRows-c.nRows%gemmRows:
							want = f16TileModel(lanes, n, c.wRow(i), c.aRow(j))
						case lanes == 16:
							want = f16DotModel(n, c.wRow(i), c.aRow(j))
						case n%16 == 0:
							want = VecDot(gguf.TypeF16)(n, c.wRow(i), c.aRow(j))
						default:
							continue // AVX2's row-by-row path: quant's bound (c.check)
						}
						got := c.dst[j*c.dstStride+i]
						require.Equal(t, math.Float32bits(want), math.Float32bits(got),
							"n=%d %d×%d row %d tok %d: got %g, want %g", n, s[0], s[1], i, j, got, want)
					}
				}
				c.check(t, false) // poison left in the gaps, within quant's bound
			}
		}
	})
}

// TestF16MatchesRefMatMul holds the AVX-512 kernels to ref.MatMul, the
// model of llama.cpp's AVX-512 build that reproduces its stored logits:
// batches (the GEMM: tinyBLAS where the length is whole 16-value chunks,
// else ggml_vec_dot_f16) and one token (DecodeRows) alike, bit for bit.
// Rows come in multiples of four, as llamafile's sgemm requires.
func TestF16MatchesRefMatMul(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		if f16Lanes() != 16 {
			t.Skip("llama.cpp's AVX-512 orders are the AVX-512 variant's")
		}
		for _, n := range []int{16, 64, 172, 272, 2048} {
			for _, s := range [][2]int{{8, 1}, {12, 2}, {36, 7}, {32, 13}} {
				nRows, nTok := s[0], s[1]
				w := make([]byte, 0, 2*n*nRows)
				for range nRows {
					w = append(w, quantized(t, r, gguf.TypeF16, n)...)
				}
				a := make([]byte, 0, 2*n*nTok)
				for range nTok {
					a = append(a, quantized(t, r, gguf.TypeF16, n)...)
				}
				x := make([]float32, n*nTok)
				quant.FP16ToFP32Row(a, x)
				want := make([]float32, nRows*nTok)
				scratch := make([]float32, ref.ActScratchBytes(gguf.TypeF16, n, nTok)/4)
				require.NoError(t, ref.MatMul(want, w, gguf.TypeF16, nRows, n, x, nTok, f32Bytes(scratch)))
				got := make([]float32, nRows*nTok)
				if nTok == 1 {
					DecodeRows(gguf.TypeF16)(n, w, 2*n, nRows, a, got)
				} else {
					Gemm(gguf.TypeF16)(n, w, 2*n, nRows, a, 2*n, nTok, got, nRows)
				}
				for i := range got {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]),
						"n=%d %d×%d: token %d row %d: got %g, ref %g", n, nRows, nTok, i/nRows, i%nRows, got[i], want[i])
				}
			}
		}
	})
}

// f32Bytes views float32 storage as bytes: ref.MatMul's scratch must be
// aligned to 4 bytes.
func f32Bytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}
