package simd

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// TestPackedIQ4XSBitExact multiplies fresh IQ4_XS rows (quantized ones and
// random bytes, whose scales reach both ends of their range), repacked, by
// packed Q8_K activations with every variant: the packed kernels sum each
// super-block's integer products exactly and then do quant's float steps
// in quant's order, so every product is quant.VecDot's bits. Row and token
// counts leave partial groups; the gaps of dst stay poisoned.
func TestPackedIQ4XSBitExact(t *testing.T) {
	r := newRand(t)
	typ := gguf.TypeIQ4_XS
	for _, sh := range packedShapes(typ) {
		n, nRows, nTok := sh[0], sh[1], sh[2]
		rows := make([][]byte, nRows)
		var w []byte
		for i := range rows {
			if i%2 == 0 {
				rows[i] = quantized(t, r, typ, n)
			} else {
				rows[i] = randomBlocks(r, typ, n)
			}
			w = append(w, rows[i]...)
		}
		packed, err := Repack(typ, nRows, n, w)
		require.NoError(t, err)
		acts := make([][]byte, nTok)
		for i := range acts {
			acts[i] = quantized(t, r, gguf.TypeQ8_K, n)
		}
		forEachVariant(t, func(t *testing.T) {
			dst, stride := runPackedGemm(t, typ, n, packed, nRows, acts)
			for tok := range nTok {
				for row := range nRows {
					got := dst[tok*stride+row]
					want := quant.VecDot(typ, n, rows[row], acts[tok])
					require.Equal(t, math.Float32bits(want), math.Float32bits(got), "%v: [tok %d, row %d] = %g, want %g", sh, tok, row, got, want)
				}
			}
		})
	}
}

// TestRepackIQ4XSRoundTrip reads every level and scale back out of the
// packed layout and checks them against the GGUF block's dequantized
// values, and that the padding rows are zero.
func TestRepackIQ4XSRoundTrip(t *testing.T) {
	r := newRand(t)
	typ := gguf.TypeIQ4_XS
	const n, nRows = 512, 19
	src := randomBlocks(r, typ, n*nRows)
	packed, err := Repack(typ, nRows, n, src)
	require.NoError(t, err)
	nb := n / 256
	levels := quant.IQ4Levels()
	for g := 0; g*PackRows < nRows; g++ {
		for b := range nb {
			blk := packed[(g*nb+b)*iq4xsGroupBytes : (g*nb+b+1)*iq4xsGroupBytes]
			for lane := range PackRows {
				row := g*PackRows + lane
				d := quant.FP16ToFP32(uint16(blk[2*lane]) | uint16(blk[2*lane+1])<<8)
				var vals []float64
				if row < nRows {
					vals = dequant(t, typ, src[(row*nb+b)*iq4xsBlockBytes:(row*nb+b+1)*iq4xsBlockBytes], 256)
				}
				for e := range 256 {
					s := e / 32
					got := float64(d) * float64(int8(blk[iq4xsScales+16*s+lane])) * float64(levels[packedIQ4XSIndex(blk, lane, s, e%32)])
					if row >= nRows {
						require.Zero(t, got, "padding row %d element %d", row, e)
						continue
					}
					require.InDelta(t, vals[e], got, 1e-6*math.Abs(vals[e]), "row %d block %d element %d", row, b, e)
				}
			}
		}
	}
}
