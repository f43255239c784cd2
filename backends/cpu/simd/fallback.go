package simd

import (
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// fallbacks are the kernels used where the active variant has none: pure
// Go through package quant. They are built once, so the API returns a
// stored function instead of allocating a closure on every call. Each
// looks up the active variant when it runs, so withVariant still applies.
var fallbacks *fallbackSet

// The closures refer back to VecDot and VecDotRows, which read fallbacks:
// filling it in init breaks the initialization cycle.
func init() { fallbacks = newFallbackSet() }

type fallbackSet struct {
	dots   map[gguf.TensorType]DotFunc
	rows   map[gguf.TensorType]RowsFunc
	quants map[gguf.TensorType]QuantFunc
	gemms  map[gguf.TensorType]GemmFunc
}

func newFallbackSet() *fallbackSet {
	f := &fallbackSet{
		dots: map[gguf.TensorType]DotFunc{}, rows: map[gguf.TensorType]RowsFunc{},
		quants: map[gguf.TensorType]QuantFunc{}, gemms: map[gguf.TensorType]GemmFunc{},
	}
	for t := gguf.TensorType(0); t < 64; t++ {
		if quant.Supported(t) {
			f.add(t)
		}
	}
	return f
}

func (f *fallbackSet) add(t gguf.TensorType) {
	f.dots[t] = func(n int, wRow, aRow []byte) float32 { return quant.VecDot(t, n, wRow, aRow) }
	f.quants[t] = func(src []float32, dst []byte) { quant.QuantizeRow(t, src, dst) }
	f.rows[t] = func(n int, wm []byte, rowBytes, nRows int, aRow []byte, dst []float32) {
		dot := VecDot(t)
		for i := range nRows {
			dst[i] = dot(n, wm[i*rowBytes:], aRow)
		}
	}
	f.gemms[t] = func(n int, w []byte, wRowBytes, nRows int, a []byte, aRowBytes, nTok int, dst []float32, dstStride int) {
		rows := VecDotRows(t)
		for tok := range nTok {
			rows(n, w, wRowBytes, nRows, a[tok*aRowBytes:], dst[tok*dstStride:tok*dstStride+nRows])
		}
	}
}
