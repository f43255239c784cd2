package synth

import (
	"io"
	"testing"

	"github.com/weft-ml/weft/gguf"
)

// BenchmarkSynthMatrix generates and quantizes one TinyLlama-sized
// ffn matrix (2048×5632) per iteration.
func BenchmarkSynthMatrix(b *testing.B) {
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeF16} {
		b.Run(typ.String(), func(b *testing.B) {
			fill := func(r int, dst []float32) error { p := newRowPRNG(1, 0, r); p.fillWeights(dst); return nil }
			b.SetBytes(2048 * 5632 * 4)
			for b.Loop() {
				if err := EncodeRows(io.Discard, typ, 5632, 2048, fill, 2); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
