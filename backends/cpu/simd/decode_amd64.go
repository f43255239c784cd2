//go:build !purego

package simd

import (
	"sync"
	"unsafe"

	"github.com/weft-ml/weft/gguf"
)

// decodeKernel stores in dst[r] the dot products of nRows weight rows
// (stride bytes apart, nb blocks of 64 values each) with one activation
// row a (codegen decode_float.go).
type decodeKernel = func(nb int, w *byte, stride int, a *byte, nRows int, dst *float32)

// decodeBlock is the values per block of the decode kernels.
const decodeBlock = 64

// decodeFuncs returns s's decode kernels as RowsFuncs (nil where it has
// none): F16 on AVX-512, BF16 where the CPU also has VDPBF16PS. Lengths
// that are not whole blocks take v's dot kernel row by row, which gives
// the same bits.
func decodeFuncs(s *kernelSet, v *impl) map[gguf.TensorType]RowsFunc {
	m := map[gguf.TensorType]RowsFunc{}
	if s.decodeF16 != nil && s.widenF16 != nil {
		m[gguf.TypeF16] = decodeRowsF16(s.decodeF16, s.widenF16, v.dots[gguf.TypeF16])
	}
	if s.decodeBF16 != nil && hasBF16DP {
		m[gguf.TypeBF16] = decodeRowsBF16(s.decodeBF16, v.dots[gguf.TypeBF16])
	}
	return m
}

// decodeScratch holds one call's activation widened to float32. A call is
// one tile of rows (the backend's 32), so the activation is widened once a
// tile: 1/32 of the conversions the weights take.
var decodeScratch = sync.Pool{New: func() any { return new([]float32) }}

// decodeRows is the RowsFunc around run, a decode kernel's call on
// buffers resliced to their exact extent (short ones panic here, before
// the kernel reads past them); lengths that are not whole blocks go to
// dot row by row.
func decodeRows(dot DotFunc, run func(n int, w []byte, rowBytes, nRows int, a []byte, dst []float32)) RowsFunc {
	return func(n int, w []byte, rowBytes, nRows int, a []byte, dst []float32) {
		if n%decodeBlock != 0 || n == 0 || nRows <= 0 {
			rowByRow(dot, n, w, rowBytes, nRows, a, dst)
			return
		}
		run(n, w[:(nRows-1)*rowBytes+2*n], rowBytes, nRows, a[:2*n], dst[:nRows])
	}
}

func decodeRowsF16(k decodeKernel, widen widenFunc, dot DotFunc) RowsFunc {
	return decodeRows(dot, func(n int, w []byte, rowBytes, nRows int, a []byte, dst []float32) {
		p := decodeScratch.Get().(*[]float32)
		if cap(*p) < n {
			*p = make([]float32, n)
		}
		af := (*p)[:n]
		widen(n/16, &a[0], &af[0], 64)
		k(n/decodeBlock, &w[0], rowBytes, (*byte)(unsafe.Pointer(&af[0])), nRows, &dst[0])
		decodeScratch.Put(p)
	})
}

func decodeRowsBF16(k decodeKernel, dot DotFunc) RowsFunc {
	return decodeRows(dot, func(n int, w []byte, rowBytes, nRows int, a []byte, dst []float32) {
		k(n/decodeBlock, &w[0], rowBytes, &a[0], nRows, &dst[0])
	})
}
