package simd

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// f16At widens element i of a little-endian binary16 row.
func f16At(b []byte, i int) float32 {
	return quant.FP16ToFP32(binary.LittleEndian.Uint16(b[2*i:]))
}

// f16TileModel is one (row, token) sum of the F16 GEMM tiles: one
// accumulator of eight lanes, lane j taking values j, j+8, j+16, … in
// order by FMA (the product of two binary16 values is exact in float32,
// so Go's rounded add is the FMA's single rounding), reduced as storeGrid
// reduces.
func f16TileModel(n int, w, a []byte) float32 {
	var acc [8]float32
	for i := range n {
		acc[i%8] += f16At(w, i) * f16At(a, i)
	}
	return reduceLanes(acc[:])
}

// TestF16GemmOrder holds every F16 GEMM output to the tile model bit for
// bit where the tiles take it (whole groups of four rows, lengths in whole
// 16-value chunks), on shapes that reach the small tiles and the wide
// AVX-512 path (several k-blocks, row blocks and token groups, odd token
// counts, more tokens than one super-block), and to the dot kernel for
// the leftover rows.
func TestF16GemmOrder(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		if Variant() == pureGo {
			t.Skip("no tiles")
		}
		shapes := append([][2]int{{36, 30}, {8, 197}, {33, 12}, {4, 11}, {40, 13}}, gemmShapes...)
		for _, n := range []int{16, 80, 256, 272, 16 * 41, 2048} {
			for _, s := range shapes {
				c := newGemmCase(t, r, gguf.TypeF16, n, s[0], s[1])
				c.run()
				for i := range c.nRows {
					for j := range c.nTok {
						want := VecDot(gguf.TypeF16)(n, c.wRow(i), c.aRow(j))
						if i < c.nRows-c.nRows%gemmRows {
							want = f16TileModel(n, c.wRow(i), c.aRow(j))
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
