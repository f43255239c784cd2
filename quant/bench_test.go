package quant

import (
	"math/rand/v2"
	"testing"

	"github.com/weft-ml/weft/gguf"
)

const benchN = 4096 // elements per row

func benchRows(b *testing.B, wt gguf.TensorType) (wq, aq []byte) {
	r := rand.New(rand.NewPCG(1, 2))
	w, a := randomWeights(r, benchN), randomWeights(r, benchN)
	var err error
	if wq, err = QuantizeAlloc(wt, w); err != nil {
		b.Fatal(err)
	}
	if aq, err = QuantizeAlloc(VecDotType(wt), a); err != nil {
		b.Fatal(err)
	}
	return wq, aq
}

// BenchmarkDequantize reports MB/s of quantized input.
func BenchmarkDequantize(b *testing.B) {
	for _, wt := range dotTypes {
		b.Run(wt.String(), func(b *testing.B) {
			wq, _ := benchRows(b, wt)
			dst := make([]float32, benchN)
			b.SetBytes(int64(len(wq)))
			for b.Loop() {
				if err := Dequantize(wt, wq, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVecDot reports MB/s of weight row.
func BenchmarkVecDot(b *testing.B) {
	for _, wt := range dotTypes {
		b.Run(wt.String(), func(b *testing.B) {
			wq, aq := benchRows(b, wt)
			b.SetBytes(int64(len(wq)))
			var sink float32
			for b.Loop() {
				sink += VecDot(wt, benchN, wq, aq)
			}
			_ = sink
		})
	}
}

// BenchmarkQuantizeRow reports MB/s of float32 activations.
func BenchmarkQuantizeRow(b *testing.B) {
	for _, at := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ8_1, gguf.TypeQ8_K} {
		b.Run(at.String(), func(b *testing.B) {
			src := randomWeights(rand.New(rand.NewPCG(3, 4)), benchN)
			dst, _ := QuantizeAlloc(at, src)
			b.SetBytes(4 * benchN)
			for b.Loop() {
				QuantizeRow(at, src, dst)
			}
		})
	}
}
