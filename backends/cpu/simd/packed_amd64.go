//go:build !purego

package simd

// wrapPacked runs the generated tiles over every group of the rows and
// every interleaved token group: packTokens tokens a call, the last group
// with the tile of its size; the last row group's missing rows are masked.
func wrapPacked(k packedKernel) PackedGemmFunc {
	if len(k.tiles) != packTokens {
		panic("simd: generated packed tiles do not match packTokens")
	}
	gb, ab, be := groupBytes(k.w), actBlockBytes(k.w), blockElems(k.w)
	return func(n int, w []byte, nRows int, act []byte, nTok int, dst []float32, dstStride int) {
		nb := n / be
		if nRows <= 0 || nTok <= 0 || nb == 0 {
			return
		}
		groups := (nRows + PackRows - 1) / PackRows
		// Reslice to the exact extent: short buffers panic here, before
		// any kernel reads or writes past them.
		w = w[:groups*nb*gb]
		act = act[:nTok*nb*ab]
		dst = dst[:(nTok-1)*dstStride+nRows]
		for t0 := 0; t0 < nTok; t0 += packTokens {
			tt := min(packTokens, nTok-t0)
			tile, a := k.tiles[tt-1], &act[t0*nb*ab]
			for g := 0; g < groups; g++ {
				rows := min(PackRows, nRows-g*PackRows)
				tile(nb, &w[g*nb*gb], a, &dst[t0*dstStride+g*PackRows], 4*dstStride, 1<<rows-1)
			}
		}
	}
}
