//go:build !purego

package simd

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/gguf"
)

// The GEMM tiles are amd64's (gemmRows is theirs); other platforms run
// the pure-Go path, which TestBF16DotOrder covers.

// TestBF16GemmOrder holds every GEMM output to the tile model bit for bit:
// whole tiles of four rows take the tiles, the leftover rows the dot
// kernel, and lengths that are not whole chunks the row-by-row path.
func TestBF16GemmOrder(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		if Variant() == pureGo {
			t.Skip("no tiles")
		}
		lanes := bf16TileLanes(t)
		for _, n := range []int{32, 64, 96, 2048, 5632, 48, 200} {
			for _, s := range gemmShapes {
				c := newGemmCase(t, r, gguf.TypeBF16, n, s[0], s[1])
				c.run()
				tiled := n%(2*lanes) == 0
				for i := range c.nRows {
					for j := range c.nTok {
						want := bf16DotModel(n, c.wRow(i), c.aRow(j))
						if tiled && i < c.nRows-c.nRows%gemmRows {
							want = bf16TileModel(lanes, n, c.wRow(i), c.aRow(j))
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
