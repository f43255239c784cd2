package simd

import (
	"math"

	"github.com/weft-ml/weft/ops/ref"
)

// Element-wise operations on the generated kernels, bit for bit the
// results of ops/ref: SiLU and softmax run ggml's vectorised exponential
// over whole groups of 16 floats (the reference models the same
// instruction sequence; its pure-Go emulation took a fifth of prefill),
// Mul, Add and softmax's scaling loops whole vectors; ops/ref does the
// tails. Variants without a kernel use ops/ref throughout.

const expGroup = 16

// SiLU is ref.SiLU: dst[i] = x[i]/(1+exp(−x[i])). dst may alias x.
func SiLU(dst, x []float32) {
	ng := len(x) / expGroup
	if active.silu == nil || ng == 0 {
		ref.SiLU(dst, x)
		return
	}
	dst = dst[:len(x)]
	active.silu(ng, &x[0], &dst[0])
	// The tail has fewer than 16 elements, so ref.SiLU treats it as a tail.
	ref.SiLU(dst[ng*expGroup:], x[ng*expGroup:])
}

// SwiGLU is ref.SwiGLU: silu(gate)·up. dst may alias gate or up.
func SwiGLU(dst, gate, up []float32) {
	SiLU(dst[:len(gate)], gate)
	Mul(dst, dst[:len(gate)], up[:len(gate)])
}

// Mul is ref.Mul: dst = a·b, b repeated over the rows of a. dst may
// alias a or b.
func Mul(dst, a, b []float32) { elementwise(active.mul, ref.Mul, dst, a, b) }

// Add is ref.Add: dst = a+b, b repeated over the rows of a. dst may
// alias a or b.
func Add(dst, a, b []float32) { elementwise(active.add, ref.Add, dst, a, b) }

// elementwise runs kernel over whole chunks of each row and ref on the rest.
func elementwise(kernel func(nc int, dst, a, b *float32), ref func(dst, a, b []float32), dst, a, b []float32) {
	n := len(b)
	nc := 0
	if kernel != nil {
		nc = n / active.lanes
	}
	if nc == 0 {
		ref(dst, a, b)
		return
	}
	body := nc * active.lanes
	for r := 0; r+n <= len(a); r += n {
		row, out := a[r:r+n], dst[r:r+n]
		kernel(nc, &out[0], &row[0], &b[0])
		ref(out[body:], row[body:], b[body:])
	}
}

// SoftmaxRow is ref.SoftmaxRow: row = softmax(row·scale), in place.
func SoftmaxRow(row []float32, scale float32) {
	steps := ref.GoSoftmax()
	if active.softmaxExp != nil {
		steps.ExpGroups = softmaxGroups
	}
	if active.scaleMax != nil {
		steps.ScaleMax, steps.Scale = scaleMax, scaleRow
	}
	ref.SoftmaxRowWith(row, scale, steps)
}

// scaleMax is ref.ScaleMax on the vector kernel for whole chunks.
func scaleMax(row []float32, scale float32) float32 {
	nc := len(row) / active.lanes
	maxv, nan := float32(math.Inf(-1)), false
	if nc > 0 {
		maxv, nan = active.scaleMax(nc, &row[0], scale)
	}
	maxv = max(maxv, ref.ScaleMax(row[nc*active.lanes:], scale))
	if nan {
		return float32(math.NaN())
	}
	return maxv
}

// scaleRow multiplies row by s on the vector kernel for whole chunks.
func scaleRow(row []float32, s float32) {
	nc := len(row) / active.lanes
	if nc > 0 {
		active.scale(nc, &row[0], s)
	}
	ref.Scale(row[nc*active.lanes:], row[nc*active.lanes:], s)
}

// softmaxGroups is ref's exponential-and-sum step on the vector kernel.
func softmaxGroups(row []float32, maxv float32) float64 {
	ng := len(row) / expGroup
	if ng == 0 {
		return 0
	}
	return active.softmaxExp(ng, &row[0], maxv)
}
