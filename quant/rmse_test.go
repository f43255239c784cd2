package quant

import (
	"fmt"
	"math"
	"testing"

	"github.com/weft-ml/weft/gguf"
)

// TestKQuantRMSEReport quantizes the ffn_down weights of synth-15m-f16 (rows
// of 768, a whole number of super-blocks) to every K-quant and logs the RMSE
// beside the RMSE of llama.cpp's own Q4_K/Q6_K tensors of the same weights in
// synth-15m-q4_k_m (quantized by llama-quantize from the F32 masters).
func TestKQuantRMSEReport(t *testing.T) {
	ref := openModel(t, "synth-15m-f16.gguf")
	km := openModel(t, "synth-15m-q4_k_m.gguf")
	prev := 1e30
	for _, typ := range []gguf.TensorType{gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		var sumSq, sumRef, sumLl, sumOursLl float64
		var n, nLl int
		for layer := 0; layer < 6; layer++ {
			name := fmt.Sprintf("blk.%d.ffn_down.weight", layer)
			rt, ok := ref.Tensor(name)
			if !ok {
				t.Fatalf("%s missing", name)
			}
			x := dequantTensor(t, ref, rt)
			q, err := QuantizeAlloc(typ, x)
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, len(x))
			if err := Dequantize(typ, q, y); err != nil {
				t.Fatal(err)
			}
			for i := range x {
				d := float64(x[i]) - float64(y[i])
				sumSq += d * d
				sumRef += float64(x[i]) * float64(x[i])
			}
			n += len(x)
			if kt, ok := km.Tensor(name); ok && kt.Type == typ {
				l := dequantTensor(t, km, kt)
				for i := range x {
					d, e := float64(x[i])-float64(l[i]), float64(x[i])-float64(y[i])
					sumLl += d * d
					sumOursLl += e * e
				}
				nLl += len(x)
			}
		}
		rmse := sqrt64(sumSq / float64(n))
		bpw := float64(typ.BlockBytes()*8) / float64(typ.BlockSize())
		line := fmt.Sprintf("%s (%.4g bits/weight): rmse %.4g, relative %.4f", typ, bpw, rmse, rmse/sqrt64(sumRef/float64(n)))
		if nLl > 0 {
			ll, ours := sqrt64(sumLl/float64(nLl)), sqrt64(sumOursLl/float64(nLl))
			line += fmt.Sprintf("; on llama.cpp's %s layers: ours %.5g, llama.cpp %.5g", typ, ours, ll)
			if ours > ll*1.001 {
				t.Errorf("%s: rmse %.5g above llama.cpp's %.5g", typ, ours, ll)
			}
		}
		t.Log(line)
		if rmse >= prev {
			t.Errorf("%s is not more accurate than the type with fewer bits", typ)
		}
		prev = rmse
	}
}

func sqrt64(v float64) float64 { return math.Sqrt(v) }
