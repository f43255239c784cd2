package simd

import (
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// benchVariants runs f as a sub-benchmark per variant.
func benchVariants(b *testing.B, f func(b *testing.B)) {
	for _, name := range Variants() {
		b.Run(name, func(b *testing.B) {
			restore, _ := withVariant(name)
			defer restore()
			f(b)
		})
	}
}

// BenchmarkVecDotRows is a decode GEMV: 1024 rows of 4096 weights against
// one activation row; MB/s counts weight bytes.
func BenchmarkVecDotRows(b *testing.B) {
	const n, rows = 4096, 1024
	r := newRand(b)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			rb, _ := typ.RowBytes(n)
			w := make([]byte, 0, rows*int(rb))
			for range rows {
				w = append(w, quantized(b, r, typ, n)...)
			}
			a := quantized(b, r, quant.VecDotType(typ), n)
			dst := make([]float32, rows)
			benchVariants(b, func(b *testing.B) {
				f := VecDotRows(typ)
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					f(n, w, int(rb), rows, a, dst)
				}
			})
		})
	}
}

// BenchmarkQuantizeRow quantizes a 4096-wide activation row; MB/s counts
// float32 input bytes.
func BenchmarkQuantizeRow(b *testing.B) {
	const n = 4096
	r := newRand(b)
	for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ8_K} {
		b.Run(typ.String(), func(b *testing.B) {
			src := randomFloats(r, n)
			size, _ := typ.RowBytes(n)
			dst := make([]byte, size)
			benchVariants(b, func(b *testing.B) {
				f := QuantizeRow(typ)
				b.SetBytes(4 * n)
				for b.Loop() {
					f(src, dst)
				}
			})
		})
	}
}
