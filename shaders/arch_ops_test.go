//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// The shaders of the qwen2, phi2 and gemma ops: GELU, Scale, LayerNorm
// (with weight and bias), and the BIAS and GEGLU matmul epilogues.

// f16Step is the spacing of binary16 values at v.
func f16Step(v float32) float64 {
	h := quant.FP32ToFP16(float32(math.Abs(float64(v))))
	return float64(quant.FP16ToFP32(h+1) - quant.FP16ToFP32(h))
}

// TestGELU runs gelu_f32 on every binary16 value (every entry of ggml's
// table) and random floats, at an odd offset. Every result must be a
// binary16 value (input and output rounded as the table does) within one
// binary16 step of ref.GELU plus, in the left tail where 1 + tanh cancels,
// the device tanh's few ulp (|x|·2⁻²³); at most 1% may differ at all.
func TestGELU(t *testing.T) {
	e := newEnv(t)
	var x []float32
	for h := range 1 << 16 {
		if v := quant.FP16ToFP32(uint16(h)); !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
			x = append(x, v)
		}
	}
	for _, v := range e.random(4000) {
		x = append(x, 14*v)
	}
	x = append(x, -10, 10, math.Nextafter32(-10, 0), math.Nextafter32(10, 0), 1e30, -1e30)
	want := make([]float32, len(x))
	ref.GELU(want, x)
	const xoff, doff = 3, 5
	xb, db := e.place(xoff, x), e.out(doff+len(x)+2)
	e.run("gelu_f32", [3]uint32{64, 1, 1}, pushWords(len(x), xoff, doff, 0), xb, db)
	got := e.readAt(db, doff, len(x))
	differ := 0
	for i, v := range x {
		if got[i] == want[i] {
			continue
		}
		differ++
		if math.Abs(float64(v)) < 10 {
			require.Equal(t, got[i], quant.FP16ToFP32(quant.FP32ToFP16(got[i])), "gelu(%g) = %g is not a binary16 value", v, got[i])
		}
		bound := f16Step(want[i]) + math.Abs(float64(v))*0x1p-23
		require.LessOrEqual(t, math.Abs(float64(got[i]-want[i])), bound, "gelu(%g): got %g, want %g", v, got[i], want[i])
	}
	t.Logf("%d of %d results differ from the CPU's (the device's tanh)", differ, len(x))
	assert.LessOrEqual(t, differ, len(x)/100)
}

// TestScale: one float multiplication, bit for bit, also in place.
func TestScale(t *testing.T) {
	e := newEnv(t)
	for _, n := range []int{1, 17, 4099} {
		x := e.random(n)
		const s = float32(11.3137085)
		want := make([]float32, n)
		ref.Scale(want, x, s)
		const xoff, doff = 2, 1
		xb, db := e.place(xoff, x), e.out(doff+n+1)
		e.run("scale_f32", [3]uint32{3, 1, 1}, pushWords(n, xoff, doff, s), xb, db)
		require.Equal(t, want, e.readAt(db, doff, n), "n=%d", n)
		e.run("scale_f32", [3]uint32{3, 1, 1}, pushWords(n, xoff, xoff, s), xb, xb)
		require.Equal(t, want, e.readAt(xb, xoff, n), "in place n=%d", n)
	}
}

// TestLayerNorm: ggml sums in double, the shader in float in another
// order: the mean and the scale differ by a few float ulp. Values of order
// 1 offset by 3 (so the centring matters); tolerance 1e-6 + 4e-6·|want|
// (the centred value loses a few bits to the offset).
func TestLayerNorm(t *testing.T) {
	e := newEnv(t)
	const eps = 1e-5
	for _, c := range []struct{ rows, cols int }{{1, 1}, {3, 7}, {5, 333}, {2, 2560}, {3, 8193}} {
		x := e.random(c.rows * c.cols)
		for i := range x {
			x[i] += 3
		}
		w, b := e.random(c.cols), e.random(c.cols)
		norm := make([]float32, len(x))
		ref.LayerNorm(norm, x, c.cols, eps)
		withW := make([]float32, len(x))
		ref.Mul(withW, norm, w)
		withB := make([]float32, len(x))
		ref.Add(withB, withW, b)
		const xoff, doff, woff, boff = 1, 2, 3, 4
		xb, wb, bb := e.place(xoff, x), e.place(woff, w), e.place(boff, b)
		label := fmt.Sprintf("%dx%d", c.rows, c.cols)
		for _, k := range []struct {
			name string
			want []float32
			bufs int
		}{{"layer_norm_f32", norm, 2}, {"layer_norm_mul_f32", withW, 3}, {"layer_norm_mul_add_f32", withB, 4}} {
			db := e.out(doff + len(x) + 1)
			e.run(k.name, e.rows(c.rows), pushWords(c.cols, c.rows, float32(eps), xoff, doff, woff, boff), []*vulkan.Buffer{xb, db, wb, bb}[:k.bufs]...)
			requireNormClose(t, k.name+" "+label, e.readAt(db, doff, len(x)), k.want, x, c.cols, eps)
		}
		// In place.
		xc := e.place(xoff, x)
		e.run("layer_norm_mul_add_f32", e.rows(c.rows), pushWords(c.cols, c.rows, float32(eps), xoff, xoff, woff, boff), xc, xc, wb, bb)
		requireNormClose(t, "in place "+label, e.readAt(xc, xoff, len(x)), withB, x, c.cols, eps)
	}
}

// requireNormClose is requireClose for LayerNorm outputs: a mean of values
// near 3 may differ by a few ulp of 3 (2.4e-7 each), and every centred
// value carries that error times the row's scale 1/sqrt(var+eps) — large
// for a short row of small spread (3x7 failed a fixed 1e-6 in CI). So the
// absolute part is 1e-6 (4 ulp of 3) times the scale, at least 1e-6.
func requireNormClose(t *testing.T, what string, got, want, x []float32, cols int, eps float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for r := 0; r < len(x)/cols; r++ {
		row := x[r*cols : (r+1)*cols]
		mean, v := 0.0, 0.0
		for _, a := range row {
			mean += float64(a)
		}
		mean /= float64(cols)
		for _, a := range row {
			v += (float64(a) - mean) * (float64(a) - mean)
		}
		abs := 1e-6 * max(1, 1/math.Sqrt(v/float64(cols)+eps))
		for i := r * cols; i < (r+1)*cols; i++ {
			if !close(float64(got[i]), float64(want[i]), abs, 4e-6) {
				require.Failf(t, what, "element %d: got %g, want %g (tolerance %g + 4e-6·|want|)", i, got[i], want[i], abs)
			}
		}
	}
}

// TestMatMulBiasGeGLU checks the BIAS and GEGLU epilogues of matvec and
// matmul against ref.MatMul + bias and gelu(gate)·up, for a float, a
// 32-block and a K-quant weight type, across weight-row chunks (the bias
// offset moves with the chunk's first row).
func TestMatMulBiasGeGLU(t *testing.T) {
	e := newEnv(t)
	for _, wt := range []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeQ4_K} {
		cols := 96
		if kQuant(wt) {
			cols = 512
		}
		for _, c := range []struct{ rows, ntok int }{{37, 1}, {70, 9}, {70, 66}} {
			kernels := []string{"matvec"}
			for _, k := range []string{"matmul", "matmul_tiled"} {
				if hasKernel(k+"_", wt) {
					kernels = append(kernels, k)
				}
			}
			for _, kern := range kernels {
				label := fmt.Sprintf("%s %s %dx%d ntok=%d", kern, typeName(wt), c.rows, cols, c.ntok)
				rawW, wf := e.weights(wt, c.rows, cols)
				rawU, uf := e.weights(wt, c.rows, cols)
				x := e.random(c.ntok * cols)
				bias := e.random(c.rows)
				mm := func(w []byte) []float32 {
					out := make([]float32, c.rows*c.ntok)
					scratch := make([]float32, (ref.ActScratchBytes(wt, cols, c.ntok)+3)/4)
					require.NoError(t, ref.MatMul(out, w, wt, c.rows, cols, x, c.ntok, unsafeBytes(scratch)))
					return out
				}
				gate, up := mm(rawW), mm(rawU)
				// Summation-order bound per output, as in TestMatMul.
				tol := 2e-6
				if wt.BlockSize() > 1 {
					tol = 4e-6
				}
				errOf := func(w []float32) []float64 {
					m := make([]float64, c.rows*c.ntok)
					for tk := range c.ntok {
						for r := range c.rows {
							s := 0.0
							for k := range cols {
								s += math.Abs(float64(w[r*cols+k]) * float64(x[tk*cols+k]))
							}
							m[tk*c.rows+r] = 1e-7 + tol*s
						}
					}
					return m
				}
				errW, errU := errOf(wf), errOf(uf)
				// Activations as the shaders take them.
				const xoff, doff, boff = 5, 3, 7
				xb, aoff := e.place(xoff, x), xoff
				switch {
				case kQuant(wt):
					qb := e.out(2 + c.ntok*cols/256*73)
					e.run("quantize_q8_k", [3]uint32{2, 1, 1}, pushWords(cols, c.ntok, xoff, 2), xb, qb)
					xb, aoff = qb, 2
				case wt.BlockSize() > 1:
					qb := e.out(2 + c.ntok*cols/32*9)
					e.run("quantize_q8_0", [3]uint32{2, 1, 1}, pushWords(cols, c.ntok, xoff, 2), xb, qb)
					xb, aoff = qb, 2
				}
				wb, ub, bb := e.buf(len(rawW), rawW), e.buf(len(rawU), rawU), e.place(boff, bias)
				groups := func(rows int) [3]uint32 {
					g := e.rows((rows + 63) / 64)
					if kern == "matvec" {
						g = e.rows(rows)
					}
					g[2] = uint32((c.ntok + 7) / 8)
					if kern == "matmul_tiled" {
						g[2] = uint32((c.ntok + 63) / 64)
					}
					return g
				}
				// The bias epilogue in two row chunks, as the executor
				// dispatches weights cut into chunks: the second chunk's
				// weights, output columns and biases start at row r0.
				wantB := append([]float32(nil), gate...)
				ref.Add(wantB, wantB, bias)
				db := e.out(doff + c.rows*c.ntok + 4)
				r0 := c.rows / 2
				rowBytes := len(rawW) / c.rows
				if len(rawW)%c.rows != 0 || (r0*rowBytes)%4 != 0 {
					r0 = 0
				}
				for _, ch := range [][2]int{{0, r0}, {r0, c.rows}} {
					if ch[0] == ch[1] {
						continue
					}
					part := e.buf(len(rawW[ch[0]*rowBytes:ch[1]*rowBytes]), pad4(append([]byte(nil), rawW[ch[0]*rowBytes:ch[1]*rowBytes]...)))
					e.run(kern+"_bias_"+typeName(wt), groups(ch[1]-ch[0]), pushWords(cols, ch[1]-ch[0], c.ntok, aoff, doff+ch[0], boff+ch[0], c.rows), part, xb, db, bb)
				}
				gotB := e.readAt(db, doff, len(wantB))
				for i := range wantB {
					require.LessOrEqual(t, math.Abs(float64(gotB[i]-wantB[i])), errW[i]+1e-7*math.Abs(float64(wantB[i])), "bias %s: output %d: got %g, want %g", label, i, gotB[i], wantB[i])
				}

				// GEGLU: gelu(gate)·up, the gate's summation-order error
				// amplified by a binary16 rounding of gate and result.
				act := make([]float32, len(gate))
				for r := 0; r < len(gate); r += c.rows {
					ref.GELU(act[r:r+c.rows], gate[r:r+c.rows])
				}
				want := make([]float32, len(gate))
				ref.Mul(want, act, up)
				dg := e.out(doff + c.rows*c.ntok + 4)
				e.run(kern+"_geglu_"+typeName(wt), groups(c.rows), pushWords(cols, c.rows, c.ntok, aoff, doff, 0, c.rows), wb, xb, dg, ub)
				got := e.readAt(dg, doff, len(want))
				for i := range want {
					// gelu' ≤ 1.13 carries the gate's error, |gelu(g)| the
					// up's; a gate off by an ulp may round to the next
					// binary16 value, and so may the result.
					bound := 1e-6*math.Abs(float64(want[i])) + 1.13*errW[i]*math.Abs(float64(up[i])) + math.Abs(float64(act[i]))*errU[i] +
						(f16Step(act[i])+1.13*f16Step(gate[i]))*math.Abs(float64(up[i]))
					require.LessOrEqual(t, math.Abs(float64(got[i]-want[i])), bound, "geglu %s: output %d: got %g, want %g", label, i, got[i], want[i])
				}
			}
		}
	}
}
