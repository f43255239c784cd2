package simd

import (
	"fmt"
	"sync"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/hugepage"
	"github.com/weft-ml/weft/quant"
)

// BenchmarkDecodeStream is a decode GEMV over weights far larger than the
// caches, split over two goroutines in 32-row tiles as the backend splits
// it; MB/s counts weight bytes, to compare with the memory bandwidth.
func BenchmarkDecodeStream(b *testing.B) {
	const n, rows, tile = 2048, 1 << 16, 32
	r := newRand(b)
	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		for _, oneRow := range []bool{false, true} {
			b.Run(fmt.Sprint(typ, "/one=", oneRow), func(b *testing.B) {
				rb, _ := typ.RowBytes(n)
				row := quantized(b, r, typ, n)
				w, free, err := hugepage.Alloc(rows * int(rb))
				if err != nil {
					b.Fatal(err)
				}
				defer free()
				for i := range rows {
					copy(w[i*int(rb):], row)
					w[i*int(rb)+int(rb)/2]++
				}
				a := quantized(b, r, quant.VecDotType(typ), n)
				dst := make([]float32, rows)
				benchVariants(b, func(b *testing.B) {
					f := VecDotRows(typ)
					if oneRow {
						dot := VecDot(typ)
						f = func(n int, w []byte, rb, nr int, a []byte, dst []float32) {
							for i := range nr {
								dst[i] = dot(n, w[i*rb:], a)
							}
						}
					}
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						var wg sync.WaitGroup
						for h := range 2 {
							wg.Go(func() {
								for r0 := h * rows / 2; r0 < (h+1)*rows/2; r0 += tile {
									f(n, w[r0*int(rb):], int(rb), tile, a, dst[r0:r0+tile])
								}
							})
						}
						wg.Wait()
					}
				})
			})
		}
	}
}

// BenchmarkPackedDecodeStream is BenchmarkDecodeStream on the packed
// layouts: one token, 32-row tiles, two goroutines; MB/s counts the GGUF
// bytes of the weights, so it compares with the row kernels directly.
func BenchmarkPackedDecodeStream(b *testing.B) {
	const n, rows, tile = 2048, 1 << 16, 32
	r := newRand(b)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			rb, _ := typ.RowBytes(n)
			row := quantized(b, r, typ, n)
			w := make([]byte, rows*int(rb))
			for i := range rows {
				copy(w[i*int(rb):], row)
			}
			packed, err := Repack(typ, rows, n, w)
			if err != nil {
				b.Fatal(err)
			}
			// As in production: repacked weights on huge pages.
			p, free, err := hugepage.Alloc(len(packed))
			if err != nil {
				b.Fatal(err)
			}
			defer free()
			copy(p, packed)
			act := make([]byte, PackActBytes(n, 1))
			PackActRow(typ, quantized(b, r, quant.VecDotType(typ), n), n, 0, 1, act)
			dst := make([]float32, rows)
			f := PackedGemm(typ)
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				var wg sync.WaitGroup
				for h := range 2 {
					wg.Go(func() {
						for r0 := h * rows / 2; r0 < (h+1)*rows/2; r0 += tile {
							f(n, p[PackedRowOffset(typ, r0, n):], tile, act, 1, dst[r0:r0+tile], tile)
						}
					})
				}
				wg.Wait()
			}
		})
	}
}
