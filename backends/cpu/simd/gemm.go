package simd

import "github.com/weft-ml/weft/gguf"

// GemmFunc sets dst[t*dstStride + r] to the dot product of weight row r
// (rows wRowBytes apart in w, nRows of them) with activation row t (rows
// aRowBytes apart in a, nTok of them, of type quant.VecDotType(w)), n
// elements each. Rows of dst beyond nRows are left alone.
type GemmFunc = func(n int, w []byte, wRowBytes, nRows int, a []byte, aRowBytes, nTok int, dst []float32, dstStride int)

// Gemm returns the fastest matrix-product kernel for weights of type w: a
// micro-kernel that reuses each weight block across several tokens where
// one exists, otherwise a loop over tokens of VecDotRows.
func Gemm(w gguf.TensorType) GemmFunc {
	if f, ok := active.gemms[w]; ok {
		return f
	}
	if f, ok := fallbacks.gemms[w]; ok {
		return f
	}
	return gemmByRows(VecDotRows(w))
}

// gemmByRows multiplies token by token with a multi-row kernel.
func gemmByRows(rows RowsFunc) GemmFunc {
	return func(n int, w []byte, wRowBytes, nRows int, a []byte, aRowBytes, nTok int, dst []float32, dstStride int) {
		for t := range nTok {
			rows(n, w, wRowBytes, nRows, a[t*aRowBytes:], dst[t*dstStride:t*dstStride+nRows])
		}
	}
}
