package simd

import "github.com/weft-ml/weft/ops/ref"

// f32RowsKernel is a generated float32 dot kernel (codegen dot_f32.go):
// dst[r] = a·(the n floats at b + r·stride bytes) for r < rows.
type f32RowsKernel = func(n int, a, b *float32, stride, rows int, dst *float32)

// VecDotF32Rows sets dst[r] to ref.VecDotF32(a, b[r·stride:]) for every
// r < len(dst), bit for bit: ggml_vec_dot_f32's order, which llama.cpp
// takes for Q·Kᵀ over an f32 KV cache and for P·V of a lone token. b
// must hold len(a) floats from each row start.
func VecDotF32Rows(a, b []float32, stride int, dst []float32) {
	f32Rows(active.f32Vec, ref.VecDotF32, a, b, stride, dst)
}

// TinyDotF32Rows sets dst[r] to ref.TinyDotF32(a, b[r·stride:]) for every
// r < len(dst), bit for bit: tinyBLAS's order, which llama.cpp takes for
// P·V of a batch over an f32 KV cache. len(a) must be a multiple of 16.
func TinyDotF32Rows(a, b []float32, stride int, dst []float32) {
	if len(a)%16 != 0 {
		panic("simd: TinyDotF32Rows needs a length that is a multiple of 16")
	}
	f32Rows(active.f32Tiny, ref.TinyDotF32, a, b, stride, dst)
}

// f32Rows runs kernel k (nil: the reference dot on each row) after the
// bounds checks the assembly cannot make.
func f32Rows(k f32RowsKernel, dot func(a, b []float32) float32, a, b []float32, stride int, dst []float32) {
	n, rows := len(a), len(dst)
	if rows == 0 {
		return
	}
	if k == nil || n == 0 {
		for r := range dst {
			dst[r] = dot(a, b[r*stride:r*stride+n])
		}
		return
	}
	_ = b[(rows-1)*stride+n-1] // the last row in bounds (stride ≥ 0)
	if stride < 0 {
		panic("simd: negative row stride")
	}
	k(n, &a[0], &b[0], 4*stride, rows, &dst[0])
}
