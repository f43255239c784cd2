package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
)

// widths returns row widths for element-wise ops: shorter than any vector,
// a vector and a tail, several vectors and a tail.
func (s *suite) widths() []int {
	if s.short {
		return []int{37}
	}
	return []int{7, 37, 100}
}

// tableCols returns row lengths for a table of type dt: one block, odd
// block counts, and for float types lengths that leave vector tails.
func (s *suite) tableCols(dt gguf.TensorType) []int {
	bs := int(dt.BlockSize())
	var cols []int
	switch {
	case bs == 1:
		cols = []int{33, 7, 96}
	case bs == 256:
		cols = []int{256, 512}
	default:
		cols = []int{96, 32, 288}
	}
	if s.short {
		return cols[:1]
	}
	return cols
}

func testGetRows(t *testing.T, s *suite) {
	for _, dt := range weightTypes {
		t.Run(typeName(dt), func(t *testing.T) {
			for _, d := range s.tableCols(dt) {
				t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
					b := s.builder(t)
					w := b.weight("table", dt, spread, vocab, d)
					out := b.op(ops.GetRows, "get", nil, w, b.tokens)
					p := b.finish(out, out, ops.GetRows, typeName(dt))
					tab := b.ws["table"]
					s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
						want := make([]float32, len(tokens)*d)
						require.NoError(t, ref.GetRows(want, tab.data, dt, d, tokens))
						// Scale: the largest magnitude in the row.
						scale := make([]float64, len(want))
						for r := range tokens {
							m := 0.0
							for _, v := range want[r*d : (r+1)*d] {
								m = max(m, math.Abs(float64(v)))
							}
							for i := r * d; i < (r+1)*d; i++ {
								scale[i] = m
							}
						}
						return want, scale
					})
				})
			}
		})
	}
}

func testSelectRows(t *testing.T, s *suite) {
	for _, d := range s.widths() {
		t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
			b := s.builder(t)
			x := b.activation("x", d, unit)
			p := b.finish(x, x, ops.SelectRows, "")
			p.node = p.out // the node under test is the selection itself
			// Fewer rows than tokens, repeated and out of order.
			p.pick = func(rng *rand.Rand, n int) []int32 {
				rows := make([]int32, 1+rng.IntN(n))
				for i := range rows {
					rows[i] = int32(rng.IntN(n))
				}
				rows[len(rows)-1] = int32(n - 1)
				return rows
			}
			s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
				want := b.gather("x", tokens)
				return want, absScale(want)
			})
		})
	}
}

func testCopy(t *testing.T, s *suite) {
	for _, d := range s.widths() {
		t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
			b := s.builder(t)
			x := b.activation("x", d, unit)
			out := b.op(ops.Copy, "copy", nil, x)
			p := b.finish(out, out, ops.Copy, "")
			s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
				want := b.gather("x", tokens)
				return want, absScale(want)
			})
		})
	}
}

func testDequantize(t *testing.T, s *suite) {
	for _, dt := range weightTypes {
		t.Run(typeName(dt), func(t *testing.T) {
			d := s.tableCols(dt)[0]
			b := s.builder(t)
			// At least maxTokens rows: the rows asked for index the batch.
			w := b.weight("w", dt, spread, maxTokens+4, d)
			out := b.op(ops.Dequantize, "dequant", nil, w)
			p := b.finish(out, out, ops.Dequantize, typeName(dt))
			vals := b.ws["w"].vals
			s.runStateless(t, p, func([]int32, int) ([]float32, []float64) {
				return vals, absScale(vals)
			})
		})
	}
}

// testBinary tests Mul or Add with a second operand of the same shape, a
// [D] row broadcast over the batch, and a [1, D] row.
func testBinary(op string) func(t *testing.T, s *suite) {
	fn := ref.Mul
	if op == ops.Add {
		fn = ref.Add
	}
	return func(t *testing.T, s *suite) {
		for _, form := range []string{"same", "row", "row2d"} {
			t.Run(form, func(t *testing.T) {
				for _, d := range s.widths() {
					t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
						b := s.builder(t)
						a := b.activation("a", d, unit)
						var bb int
						switch form {
						case "same":
							bb = b.activation("b", d, unit)
						case "row":
							bb = b.weight("b", gguf.TypeF32, unit, d)
						case "row2d":
							bb = b.weight("b", gguf.TypeF32, unit, 1, d)
						}
						out := b.op(op, "op", nil, a, bb)
						p := b.finish(out, out, op, form)
						s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
							x := b.gather("a", tokens)
							y := b.ws["b"].vals
							if form == "same" {
								y = b.gather("b", tokens)
							}
							want := make([]float32, len(x))
							fn(want, x, y)
							scale := make([]float64, len(x))
							for i := range scale {
								// Add: |a|+|b| (cancellation); Mul: |want|.
								if op == ops.Add {
									scale[i] = math.Abs(float64(x[i])) + math.Abs(float64(y[i%len(y)]))
								} else {
									scale[i] = math.Abs(float64(want[i]))
								}
							}
							return want, scale
						})
					})
				}
			})
		}
	}
}

func testScale(t *testing.T, s *suite) {
	for _, d := range s.widths() {
		t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
			b := s.builder(t)
			x := b.activation("x", d, unit)
			const k = 0.3701
			out := b.op(ops.Scale, "scale", graph.Attrs{"scale": k}, x)
			p := b.finish(out, out, ops.Scale, "")
			s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
				want := b.gather("x", tokens)
				ref.Scale(want, want, float32(k))
				return want, absScale(want)
			})
		})
	}
}

// perRow applies fn to each row of width d, as ggml applies SiLU: its
// vector groups start afresh on every row.
func perRow(fn func(dst, x []float32), x []float32, d int) []float32 {
	out := make([]float32, len(x))
	for r := 0; r+d <= len(x); r += d {
		fn(out[r:r+d], x[r:r+d])
	}
	return out
}

// testUnary tests SiLU or GELU on values wide enough to reach GELU's
// clamps at ±10 and SiLU's saturation.
func testUnary(op string) func(t *testing.T, s *suite) {
	fn := ref.SiLU
	if op == ops.GELU {
		fn = ref.GELU
	}
	return func(t *testing.T, s *suite) {
		for _, d := range s.widths() {
			t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
				b := s.builder(t)
				x := b.activation("x", d, dist{sd: 5})
				out := b.op(op, "op", nil, x)
				p := b.finish(out, out, op, "")
				s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
					xs := b.gather("x", tokens)
					want := perRow(fn, xs, d)
					scale := absScale(want)
					if op == ops.GELU {
						// In the left tail 1 + tanh cancels: an ulp of tanh
						// (a device's tanh is a few ulp off libm's) moves the
						// result by |x|·2⁻²⁵; allow 4 (2⁻¹³·|x| at Rel 2⁻¹⁰).
						for i, v := range xs {
							scale[i] += 0x1p-13 * math.Abs(float64(v))
						}
					}
					return want, scale
				})
			})
		}
	}
}

// testSoftCap soft-caps values spread over the cap's range and beyond.
func testSoftCap(t *testing.T, s *suite) {
	const cap = 30
	for _, d := range s.widths() {
		t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
			b := s.builder(t)
			x := b.activation("x", d, dist{sd: 40})
			out := b.op(ops.SoftCap, "softcap", graph.Attrs{"cap": cap}, x)
			p := b.finish(out, out, ops.SoftCap, "")
			s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
				want := perRow(func(dst, x []float32) { ref.SoftCapRow(dst, x, cap) }, b.gather("x", tokens), d)
				// A device's tanh is exp-based: near 0 its error is absolute
				// (lavapipe: 8e-7 at 0.18), so the scale has a part of cap/8.
				scale := absScale(want)
				for i := range scale {
					scale[i] += cap / 8
				}
				return want, scale
			})
		})
	}
}

func testSwiGLU(t *testing.T, s *suite) {
	for _, d := range s.widths() {
		t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
			b := s.builder(t)
			g := b.activation("gate", d, dist{sd: 3})
			u := b.activation("up", d, unit)
			out := b.op(ops.SwiGLU, "swiglu", nil, g, u)
			p := b.finish(out, out, ops.SwiGLU, "")
			s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
				gate, up := b.gather("gate", tokens), b.gather("up", tokens)
				want := make([]float32, len(gate))
				for r := 0; r < len(gate); r += d {
					ref.SwiGLU(want[r:r+d], gate[r:r+d], up[r:r+d])
				}
				return want, absScale(want)
			})
		})
	}
}

func testSoftmax(t *testing.T, s *suite) {
	for _, d := range s.widths() {
		t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
			b := s.builder(t)
			x := b.activation("x", d, dist{sd: 3})
			const k = 0.6003
			out := b.op(ops.Softmax, "softmax", graph.Attrs{"scale": k}, x)
			p := b.finish(out, out, ops.Softmax, "")
			s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
				want := b.gather("x", tokens)
				for r := 0; r < len(want); r += d {
					ref.SoftmaxRow(want[r:r+d], float32(k))
				}
				return want, absScale(want)
			})
		})
	}
}

// normWidths pairs a row width with the spread of its values: a small sd
// makes eps (1e-5) count, so a kernel that drops or misplaces it fails.
// normCase is one norm geometry: rows of d values at standard deviation
// sd, normalised in groups of g values (0: the whole row).
type normCase struct {
	d  int
	sd float64
	g  int
}

func (s *suite) normWidths() []normCase {
	all := []normCase{{d: 37, sd: 1}, {d: 100, sd: 0.003}, {d: 7, sd: 2}, {d: 260, sd: 1}}
	if s.short {
		return all[:2]
	}
	return all
}

// testNorm tests RMSNorm, LayerNorm and their fused weight (and bias) forms.
func testNorm(op string) func(t *testing.T, s *suite) {
	layer := op == ops.LayerNorm || op == ops.LayerNormMul || op == ops.LayerNormMulAdd
	withW := op == ops.RMSNormMul || op == ops.LayerNormMul || op == ops.LayerNormMulAdd
	withB := op == ops.LayerNormMulAdd
	const eps = 1e-5
	return func(t *testing.T, s *suite) {
		cases := s.normWidths()
		if !layer {
			// Grouped norms (Qwen 3's per-head q and k norms): each group
			// of g values of a row is normalised on its own.
			cases = append(cases, normCase{d: 3 * 37, sd: 1, g: 37}, normCase{d: 4 * 64, sd: 0.5, g: 64})
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("D=%d,sd=%g,group=%d", c.d, c.sd, c.g), func(t *testing.T) {
				d, attrs := c.d, graph.Attrs{"eps": eps}
				if c.g > 0 {
					d, attrs["group"] = c.g, float64(c.g)
				}
				b := s.builder(t)
				in := []int{b.activation("x", c.d, dist{sd: c.sd})}
				if withW {
					in = append(in, b.weight("w", gguf.TypeF32, unit, d))
				}
				if withB {
					in = append(in, b.weight("b", gguf.TypeF32, unit, d))
				}
				out := b.op(op, "norm", attrs, in...)
				p := b.finish(out, out, op, "")
				s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
					x := b.gather("x", tokens)
					want := make([]float32, len(x))
					scale := make([]float64, len(x))
					for r := 0; r < len(x); r += d {
						row, out := x[r:r+d], want[r:r+d]
						if layer {
							ref.LayerNorm(out, row, d, eps)
						} else {
							ref.RMSNorm(out, row, d, eps)
						}
						// Scale: each element before the weight, with
						// LayerNorm's centring counted as |x|+|mean|.
						var mean, ss float64
						for _, v := range row {
							mean += float64(v)
						}
						mean /= float64(d)
						for _, v := range row {
							c := float64(v)
							if layer {
								c -= mean
							}
							ss += c * c
						}
						inv := 1 / math.Sqrt(ss/float64(d)+eps)
						for i, v := range row {
							m := math.Abs(float64(v)) * inv
							if layer {
								m += math.Abs(mean) * inv
							}
							scale[r+i] = m
						}
					}
					if withW {
						w := b.ws["w"].vals
						ref.Mul(want, want, w)
						for i := range scale {
							scale[i] *= math.Abs(float64(w[i%d]))
						}
					}
					if withB {
						bias := b.ws["b"].vals
						ref.Add(want, want, bias)
						for i := range scale {
							scale[i] += math.Abs(float64(want[i]))
						}
					}
					return want, scale
				})
			})
		}
	}
}

// ropeCase is one RoPE geometry.
type ropeCase struct {
	heads, headDim, dims int
	base, freqScale      float64
	pos0                 int
}

func testRoPE(t *testing.T, s *suite) {
	cases := []ropeCase{
		{4, 8, 8, 10000, 1, 0},
		{3, 64, 64, 10000, 1, 3000},
		{2, 48, 32, 500000, 0.25, 7},
	}
	if s.short {
		cases = cases[:2]
	}
	for _, neox := range []bool{false, true} {
		form := "norm"
		if neox {
			form = "neox"
		}
		t.Run(form, func(t *testing.T) {
			for _, c := range cases {
				name := fmt.Sprintf("H=%d,hd=%d,dims=%d,base=%g,fs=%g,pos=%d", c.heads, c.headDim, c.dims, c.base, c.freqScale, c.pos0)
				t.Run(name, func(t *testing.T) { s.runRoPE(t, c, neox, form) })
			}
		})
	}
}

func (s *suite) runRoPE(t *testing.T, c ropeCase, neox bool, form string) {
	d := c.heads * c.headDim
	b := s.builder(t)
	x := b.activation("x", d, unit)
	nx := 0.0
	if neox {
		nx = 1
	}
	out := b.op(ops.RoPE, "rope", graph.Attrs{"heads": float64(c.heads), "head_dim": float64(c.headDim), "dims": float64(c.dims),
		"base": c.base, "freq_scale": c.freqScale, "neox": nx}, x, b.positions)
	p := b.finish(out, out, ops.RoPE, form)
	if s.skipped(t, p.op, p.variant) || !s.supported(t, p) {
		return
	}
	r := ref.RoPE{Dims: c.dims, Base: float32(c.base), FreqScale: float32(c.freqScale), NeoX: neox, Unfused: s.o.UnfusedRoPE}
	want := func(tokens []int32, pos0 int) ([]float32, []float64) {
		in := b.gather("x", tokens)
		want := append([]float32(nil), in...)
		scale := absScale(in)
		for t := range tokens {
			r.Apply(want[t*d:(t+1)*d], c.heads, c.headDim, int32(pos0+t))
			// Scale: a rotated element mixes its pair.
			for h := range c.heads {
				for i := range c.dims / 2 {
					lo, hi := 2*i, 2*i+1
					if neox {
						lo, hi = i, i+c.dims/2
					}
					o := t*d + h*c.headDim
					m := math.Abs(float64(in[o+lo])) + math.Abs(float64(in[o+hi]))
					scale[o+lo], scale[o+hi] = m, m
				}
			}
		}
		return want, scale
	}
	tol := s.o.tolerance(ops.RoPE, form)
	prog, _ := s.compile(t, p, maxTokens, false)
	ss := s.session(t, prog, c.pos0+64, 0, c.pos0)
	rng := s.rng(t)
	worst := 0.0
	for _, n := range s.batchSizes() {
		worst = max(worst, s.step(t, rng, ss, p, n, want, tol))
	}
	report(t, tol, worst)
}
