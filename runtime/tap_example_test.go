package runtime_test

import (
	"fmt"
	"log"
	"math"

	"github.com/weft-ml/weft/runtime"
)

// Tap every layer's residual stream (fused into "blk.N.ffn_out+l_out"; the
// pattern finds it by the name of the node the fusion replaced) and print
// its L2 norm at the prompt's last token.
func Example_tap() {
	m, err := runtime.Open("../testdata/stories260K.gguf", runtime.Options{Taps: "blk.*.l_out"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession(runtime.SessionOptions{Tap: func(t runtime.TapInfo, v []float32) error {
		var sum float64
		for _, x := range v[(t.Rows-1)*t.Width:] {
			sum += float64(x) * float64(x)
		}
		fmt.Printf("layer %d %-20s %.2f\n", t.Layer, t.Name, math.Sqrt(sum))
		return nil
	}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Eval([]int32{1, 403, 407}, false); err != nil {
		log.Fatal(err)
	}
	// Output:
	// layer 0 blk.0.ffn_out+l_out  4.92
	// layer 1 blk.1.ffn_out+l_out  7.73
	// layer 2 blk.2.ffn_out+l_out  8.73
	// layer 3 blk.3.ffn_out+l_out  12.70
	// layer 4 blk.4.ffn_out+l_out  14.74
}
