package simd

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/hugepage"
	"github.com/weft-ml/weft/quant"
)

// BenchmarkDecodeStream is a decode GEMV over weights far larger than the
// caches, split over two goroutines in 32-row tiles as the backend splits
// it, through VecDotRows ("rows"), VecDot row by row ("one") and
// DecodeRows ("decode", what the backend runs); MB/s counts weight bytes,
// to compare with the memory bandwidth.
func BenchmarkDecodeStream(b *testing.B) {
	const n, rows, tile = 2048, 1 << 16, 32
	r := newRand(b)
	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS, gguf.TypeIQ4_NL, gguf.TypeIQ2_XXS} {
		for _, kernel := range []string{"rows", "one", "decode"} {
			b.Run(fmt.Sprint(typ, "/", kernel), func(b *testing.B) {
				rb, _ := typ.RowBytes(n)
				row := quantized(b, r, typ, n)
				w := hugeBuffer(b, rows*int(rb))
				for i := range rows {
					copy(w[i*int(rb):], row)
					w[i*int(rb)+int(rb)/2]++
				}
				a := quantized(b, r, quant.VecDotType(typ), n)
				dst := make([]float32, rows)
				benchVariants(b, func(b *testing.B) {
					f := VecDotRows(typ)
					switch kernel {
					case "one":
						dot := VecDot(typ)
						f = func(n int, w []byte, rb, nr int, a []byte, dst []float32) {
							for i := range nr {
								dst[i] = dot(n, w[i*rb:], a)
							}
						}
					case "decode":
						f = DecodeRows(typ)
					}
					streamTiles(b, len(w), rows, tile, func(r0 int) {
						f(n, w[r0*int(rb):], int(rb), tile, a, dst[r0:r0+tile])
					})
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
			p := hugeBuffer(b, len(packed)) // as in production
			copy(p, packed)
			act := make([]byte, PackActBytes(n, 1))
			PackActRow(typ, quantized(b, r, quant.VecDotType(typ), n), n, 0, 1, act)
			dst := make([]float32, rows)
			f := PackedGemm(typ)
			streamTiles(b, len(w), rows, tile, func(r0 int) {
				f(n, p[PackedRowOffset(typ, r0, n):], tile, act, 1, dst[r0:r0+tile], tile)
			})
		})
	}
}

// hugeBuffer returns size bytes on huge pages, where decode reads its
// weights from, freed when the benchmark ends.
func hugeBuffer(b *testing.B, size int) []byte {
	buf, free, err := hugepage.Alloc(size)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { free() })
	return buf
}

// streamTiles times the tiles of rows rows claimed in order by two
// goroutines, one tile at a time, as the backend deals a decode GEMV's
// tiles; bytes is what one pass streams.
func streamTiles(b *testing.B, bytes, rows, tile int, tileAt func(r0 int)) {
	b.SetBytes(int64(bytes))
	for b.Loop() {
		var wg sync.WaitGroup
		var next atomic.Int64
		for range 2 {
			wg.Go(func() {
				for {
					r0 := int(next.Add(int64(tile))) - tile
					if r0 >= rows {
						return
					}
					tileAt(r0)
				}
			})
		}
		wg.Wait()
	}
}
