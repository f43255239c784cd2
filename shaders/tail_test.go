//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
)

// tailKinds are tail.glsl's TAIL_KIND values by activation kind, with
// the words each kind takes for n values (0: not whole blocks).
var tailKinds = []struct {
	name  string
	kind  int
	words func(n int) int
}{
	{"f32", 0, func(int) int { return 0 }},
	{"q8_0", 1, func(n int) int { return n / 32 * 9 * b2i(n%32 == 0) }},
	{"q8_1", 2, func(n int) int { return n / 32 * 10 * b2i(n%32 == 0) }},
	{"q8_k", 3, func(n int) int { return n / 256 * 73 * b2i(n%256 == 0) }},
	{"f16", 4, func(n int) int { return n }},
	{"bf16", 5, func(n int) int { return n }},
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The matvec tails (tail.glsl) give the bits of the dispatches they
// replace: matvec_add_norm_* those of matvec_add_*#1 then
// rms_norm_mul_KIND (or rms_norm_mul_f32), matvec_gateup_quant_* those of
// matvec_gateup_*#1 then quantize_KIND or round_KIND, for every activation
// kind, on vectors of several tail passes (72 blocks for 64 invocations,
// 9 Q8_K super-blocks for 8 a pass, one all zero; 2243 float values),
// each dispatch run twice (the last workgroup resets the counter).
func TestMatVecTails(t *testing.T) {
	e := newEnv(t)
	const eps = 1e-5
	const doff, roff, noff, qoff, woff = 3, 7, 2, 5, 4
	// The tail does not depend on the weight type, but its bindings do
	// (float activations, Q8_1's, a lattice table after the tail's).
	for _, wt := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ4_K, gguf.TypeIQ2_XXS} {
		cols := 96
		if kQuant(wt) {
			cols = 256
		}
		for _, n := range []int{2243, 2304} {
			rawW, _ := e.weights(wt, n, cols)
			rawU, _ := e.weights(wt, n, cols)
			for _, k := range tailKinds {
				words := k.words(n)
				float := k.kind == 0 || k.kind >= 4
				if float != (n == 2243) || !float && words == 0 {
					continue // float kinds on an odd length, blocks on whole blocks
				}
				label := fmt.Sprintf("%s %s n=%d", typeName(wt), k.name, n)
				xb, aoff := e.activations(wt, e.random(cols), 1, cols)
				wb, ub := e.buf(len(rawW), rawW), e.buf(len(rawU), rawU)
				res, nw := e.random(n), e.random(n)
				if n >= 2048 {
					clear(nw[1024:1280]) // a zero super-block (and blocks) of the norm's output
				}
				rb, nwb := e.place(roff, res), e.place(woff, nw)
				matvec := pushWords(cols, n, 1, aoff, doff, roff, n)
				cnt := qoff + words + 2

				// Separately.
				dA, ndA, qA := e.out(doff+n+4), e.out(noff+n+4), e.out(cnt+1)
				e.run("matvec_add_"+typeName(wt)+"#1", e.rows(n), matvec, e.withGrid(wt, wb, xb, dA, rb)...)
				norm := "rms_norm_mul_f32"
				bufs := []*vulkan.Buffer{dA, ndA, nwb}
				if k.kind != 0 {
					norm = "rms_norm_mul_" + k.name
					bufs = append(bufs, qA)
				}
				e.run(norm, e.rows(1), pushWords(n, 1, float32(eps), doff, noff, woff, qoff), bufs...)
				// As a tail, twice.
				dB, ndB, qB := e.out(doff+n+4), e.out(noff+n+4), e.words(make([]uint32, cnt+1), 0)
				for range 2 {
					e.run(fmt.Sprintf("matvec_add_norm_%s#1#%d", typeName(wt), k.kind), e.rows(n),
						append(append([]byte(nil), matvec...), pushWords(cnt, float32(eps), woff, noff, qoff)...),
						e.withGrid(wt, wb, xb, dB, rb, nwb, ndB, qB)...)
					require.Equal(t, f32Bits(e.readAt(dA, doff, n)), f32Bits(e.readAt(dB, doff, n)), "%s: residual sums", label)
					require.Equal(t, f32Bits(e.readAt(ndA, noff, n)), f32Bits(e.readAt(ndB, noff, n)), "%s: norm", label)
					require.Equal(t, f32Bits(e.readAt(qA, qoff, words)), f32Bits(e.readAt(qB, qoff, words)), "%s: norm's activations", label)
					require.Zero(t, f32Bits(e.readAt(qB, cnt, 1))[0], "%s: counter reset", label)
				}
				if k.kind == 0 {
					continue // the gate·up tail always writes activations
				}

				// The gate·up's quantization, separately and as a tail.
				gA := e.out(doff + n + 4)
				e.run("matvec_gateup_"+typeName(wt)+"#1", e.rows(n), matvec, e.withGrid(wt, wb, xb, gA, ub)...)
				sep := "quantize_" + k.name
				if k.kind >= 4 {
					sep = "round_" + k.name
				}
				qC := e.out(cnt + 1)
				e.run(sep, [3]uint32{4, 1, 1}, pushWords(n, 1, doff, qoff), gA, qC)
				gB, qD := e.out(doff+n+4), e.words(make([]uint32, cnt+1), 0)
				for range 2 {
					e.run(fmt.Sprintf("matvec_gateup_quant_%s#1#%d", typeName(wt), k.kind), e.rows(n),
						append(append([]byte(nil), matvec...), pushWords(cnt, float32(0), 0, 0, qoff)...),
						e.withGrid(wt, wb, xb, gB, ub, qD)...)
					require.Equal(t, f32Bits(e.readAt(gA, doff, n)), f32Bits(e.readAt(gB, doff, n)), "%s: gate·up", label)
					require.Equal(t, f32Bits(e.readAt(qC, qoff, words)), f32Bits(e.readAt(qD, qoff, words)), "%s: gate·up's activations", label)
					require.Zero(t, f32Bits(e.readAt(qD, cnt, 1))[0], "%s: counter reset", label)
				}
			}
		}
	}
}
