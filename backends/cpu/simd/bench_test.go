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
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeTQ2_0, gguf.TypeIQ2_XXS} {
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

// BenchmarkGemm is a prefill product: a 2048×2048 weight against 64
// tokens, by the GEMM tiles ("gemm") and by the VecDotRows loop over
// tokens it replaces ("rows"), both over 32-row tiles as the executor
// hands them out. GFLOP/s counts 2·n·rows·tokens.
func BenchmarkGemm(b *testing.B) {
	const n, rows, toks, tile = 2048, 2048, 64, 32
	r := newRand(b)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeTQ2_0, gguf.TypeIQ2_XXS} {
		b.Run(typ.String(), func(b *testing.B) {
			at := quant.VecDotType(typ)
			wb, _ := typ.RowBytes(n)
			ab, _ := at.RowBytes(n)
			w := make([]byte, 0, rows*int(wb))
			for range rows {
				w = append(w, quantized(b, r, typ, n)...)
			}
			a := make([]byte, 0, toks*int(ab))
			for range toks {
				a = append(a, quantized(b, r, at, n)...)
			}
			dst := make([]float32, rows*toks)
			for _, how := range []string{"gemm", "rows"} {
				b.Run(how, func(b *testing.B) {
					benchVariants(b, func(b *testing.B) {
						f := Gemm(typ)
						if how == "rows" {
							f = gemmByRows(VecDotRows(typ))
						}
						for b.Loop() {
							for r0 := 0; r0 < rows; r0 += tile {
								f(n, w[r0*int(wb):], int(wb), tile, a, int(ab), toks, dst[r0:], rows)
							}
						}
						b.ReportMetric(2*n*rows*toks*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				})
			}
		})
	}
}

// BenchmarkElementwise times the element-wise kernels on a row of
// TinyLlama's FFN width (SiLU, Mul) and a 2048-position attention row
// (Softmax); MB/s counts float32 input bytes.
func BenchmarkElementwise(b *testing.B) {
	r := newRand(b)
	ffn, scores := randomFloats(r, 5632), randomFloats(r, 2048)
	up, out := randomFloats(r, 5632), make([]float32, 5632)
	row := make([]float32, len(scores))
	cases := []struct {
		name  string
		bytes int
		run   func()
	}{
		{"silu", 4 * len(ffn), func() { SiLU(out, ffn) }},
		{"mul", 8 * len(ffn), func() { Mul(out, ffn, up) }},
		{"softmax", 4 * len(scores), func() { copy(row, scores); SoftmaxRow(row, 0.125) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			benchVariants(b, func(b *testing.B) {
				b.SetBytes(int64(c.bytes))
				for b.Loop() {
					c.run()
				}
			})
		})
	}
}
