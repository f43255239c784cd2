package simd

import (
	"sync"

	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// geluTable holds ref.GELUTableEntry for every binary16 bit pattern, as
// ggml keeps ggml_table_gelu_f16 (widened here, so a lookup is one load):
// 256 KiB, built on first use (about a millisecond).
var geluTable = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = ref.GELUTableEntry(uint16(h))
	}
	return &t
})

// GELU is ref.GELU bit for bit, by table lookup: dst[i] = 0 for x ≤ −10,
// x for x ≥ 10, else the table entry of x rounded to binary16. The
// generated kernel converts and gathers whole vectors (the scalar binary16
// rounding costs about 8 ns an element); Go does the tail. dst may alias x.
func GELU(dst, x []float32) {
	t := geluTable()
	dst = dst[:len(x)]
	body := 0
	if active.gelu != nil {
		if nc := len(x) / active.lanes; nc > 0 {
			active.gelu(nc, &dst[0], &x[0], &t[0])
			body = nc * active.lanes
		}
	}
	for i := body; i < len(x); i++ {
		switch v := x[i]; {
		case v <= -10:
			dst[i] = 0
		case v >= 10:
			dst[i] = v
		default:
			dst[i] = t[quant.FP32ToFP16(v)]
		}
	}
}
