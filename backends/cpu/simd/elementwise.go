package simd

import "github.com/weft-ml/weft/ops/ref"

// The element-wise kernels below run ggml's vectorised exponential over
// whole groups of 16 floats and leave the rest to ops/ref, whose results
// they reproduce bit for bit (the reference models the same instruction
// sequence). Decode spends a few percent and prefill over a tenth of its
// time here with the pure-Go emulation.

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
	ref.Mul(dst, dst[:len(gate)], up[:len(gate)])
}

// SoftmaxRow is ref.SoftmaxRow: row = softmax(row·scale), in place.
func SoftmaxRow(row []float32, scale float32) {
	if active.softmaxExp == nil {
		ref.SoftmaxRow(row, scale)
		return
	}
	ref.SoftmaxRowWith(row, scale, softmaxGroups)
}

// softmaxGroups is ref's exponential-and-sum step on the vector kernel.
func softmaxGroups(row []float32, maxv float32) float64 {
	ng := len(row) / expGroup
	if ng == 0 {
		return 0
	}
	return active.softmaxExp(ng, &row[0], maxv)
}
