package simd

import (
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// flashBlock is ggml's vector step in ggml_vec_mad_*: 64 values; the
// elements past the last whole block are its unfused scalar tail.
const flashBlock = 64

// FlashMadF16 is ref.FlashMad(acc, x, vs, true) with x in binary16 bits
// (len(acc) values at x): the generated kernel over ggml's whole vector
// blocks, ref.FlashMad for the tail (or everything, without a kernel).
// tmp holds len(acc) floats of scratch.
func FlashMadF16(acc []float32, x []byte, vs float32, tmp []float32) {
	done := 0
	if np := len(acc) &^ (flashBlock - 1); active.flashF16 != nil && np > 0 {
		active.flashF16(np/active.lanes, &acc[0], &x[:2*np][0], vs)
		done = np
	}
	if done == len(acc) {
		return
	}
	rest := tmp[:len(acc)-done]
	quant.FP16ToFP32Row(x[2*done:], rest)
	ref.FlashMad(acc[done:], rest, vs, true)
}

// FlashMadF32 is ref.FlashMad(acc, x, vs, false) on the generated kernel
// over whole vector blocks.
func FlashMadF32(acc, x []float32, vs float32) {
	done := 0
	if np := len(acc) &^ (flashBlock - 1); active.flashF32 != nil && np > 0 {
		active.flashF32(np/active.lanes, &acc[0], &x[:np][0], vs)
		done = np
	}
	if done < len(acc) {
		ref.FlashMad(acc[done:], x[done:len(acc)], vs, false)
	}
}
