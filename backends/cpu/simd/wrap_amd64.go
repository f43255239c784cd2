//go:build !purego

package simd

import (
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// The wrappers turn slices into the pointers the assembly takes. Slicing
// to the exact extent first keeps the kernels inside the buffers: short
// input panics with Go's index error, like quant.VecDot, instead of reading
// past the end.

// chunkBytes is the size of one chunk of type t.
func chunkBytes(t gguf.TensorType, chunk int) int {
	n, err := t.RowBytes(uint64(chunk))
	if err != nil {
		panic("simd: generated table has a bad chunk size: " + err.Error())
	}
	return int(n)
}

func wrapDot(k dotKernel) DotFunc {
	t, at := k.w, quant.VecDotType(k.w)
	wb, ab := chunkBytes(t, k.chunk), chunkBytes(at, k.chunk)
	return func(n int, w, a []byte) float32 {
		nb := n / k.chunk
		var s float32
		if nb > 0 {
			s = k.one(nb, &w[:nb*wb][0], &a[:nb*ab][0])
		}
		if rest := n - nb*k.chunk; rest > 0 {
			s += quant.VecDot(t, rest, w[nb*wb:], a[nb*ab:])
		}
		return s
	}
}

func wrapRows(k dotKernel) RowsFunc {
	t, at := k.w, quant.VecDotType(k.w)
	wb, ab := chunkBytes(t, k.chunk), chunkBytes(at, k.chunk)
	return func(n int, w []byte, rowBytes, nRows int, a []byte, dst []float32) {
		nb := n / k.chunk
		if nRows <= 0 {
			return
		}
		dst = dst[:nRows]
		if nb > 0 {
			w := w[:(nRows-1)*rowBytes+nb*wb]
			a := a[:nb*ab]
			i := 0
			for ; k.rows != nil && i+rowsPerCall <= nRows; i += rowsPerCall {
				k.rows(nb, &w[i*rowBytes], rowBytes, &a[0], &dst[i])
			}
			for ; i < nRows; i++ {
				dst[i] = k.one(nb, &w[i*rowBytes], &a[0])
			}
		} else {
			clear(dst)
		}
		if rest := n - nb*k.chunk; rest > 0 {
			for i := range dst {
				dst[i] += quant.VecDot(t, rest, w[i*rowBytes+nb*wb:], a[nb*ab:])
			}
		}
	}
}

func wrapQuant(k quantKernel) QuantFunc {
	bb := chunkBytes(k.t, k.chunk)
	return func(src []float32, dst []byte) {
		nb := len(src) / k.chunk
		if nb > 0 && nb*k.chunk == len(src) && k.fn(nb, &src[0], &dst[:nb*bb][0]) {
			return
		}
		quant.QuantizeRow(k.t, src, dst)
	}
}
