//go:build !purego

package simd

import "github.com/weft-ml/weft/quant"

// wrapGemm tiles the product into gemmRows × T calls of the generated
// tiles, T as large as the kernel offers; leftover rows (fewer than
// gemmRows) use the single-row kernel. Rows whose length is not a whole
// number of chunks go to the generic path.
func wrapGemm(k gemmKernel, dot DotFunc, rows RowsFunc) GemmFunc {
	wb := chunkBytes(k.w, k.chunk)
	ab := chunkBytes(quant.VecDotType(k.w), k.chunk)
	fallback := gemmByRows(rows)
	maxT := len(k.tiles)
	return func(n int, w []byte, wRowBytes, nRows int, a []byte, aRowBytes, nTok int, dst []float32, dstStride int) {
		nb := n / k.chunk
		if nRows <= 0 || nTok <= 0 {
			return
		}
		if nb == 0 || nb*k.chunk != n {
			fallback(n, w, wRowBytes, nRows, a, aRowBytes, nTok, dst, dstStride)
			return
		}
		// Reslice to the exact extent: short buffers panic here, before
		// any kernel reads past them.
		w = w[:(nRows-1)*wRowBytes+nb*wb]
		a = a[:(nTok-1)*aRowBytes+nb*ab]
		dst = dst[:(nTok-1)*dstStride+nRows]
		full := nRows - nRows%gemmRows
		for t0 := 0; t0 < nTok; t0 += maxT {
			tt := min(maxT, nTok-t0)
			tile := k.tiles[tt-1]
			for r := 0; r < full; r += gemmRows {
				tile(nb, &w[r*wRowBytes], wRowBytes, &a[t0*aRowBytes], aRowBytes, &dst[t0*dstStride+r], 4*dstStride)
			}
			for r := full; r < nRows; r++ {
				for t := t0; t < t0+tt; t++ {
					dst[t*dstStride+r] = dot(n, w[r*wRowBytes:], a[t*aRowBytes:])
				}
			}
		}
	}
}
