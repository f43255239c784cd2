package backendtest

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// actDist is how matmul activations are drawn: blocks of a row differ in
// range a little, so activation quantization has work to do.
var actDist = dist{sd: 1, spread: 0.5}

// outRows returns weight row counts: neither multiples of 16 nor of 32,
// one below a 32-row tile and one past two.
func (s *suite) outRows() []int {
	if s.short {
		return []int{37}
	}
	return []int{37, 70}
}

// alignedBytes returns n zero bytes aligned to 4, as ref.MatMul's scratch
// must be.
func alignedBytes(n int) []byte {
	u := make([]uint32, (n+3)/4+1)
	return unsafe.Slice((*byte)(unsafe.Pointer(&u[0])), n)
}

// refMatMul is ref.MatMul of the activations x (nTok rows of w.cols)
// against weight w of type dt.
func refMatMul(t *testing.T, w *tensor, dt gguf.TensorType, x []float32, nTok int) []float32 {
	rows := len(w.vals) / w.cols
	dst := make([]float32, nTok*rows)
	scratch := alignedBytes(ref.ActScratchBytes(dt, w.cols, nTok))
	require.NoError(t, ref.MatMul(dst, w.data, dt, rows, w.cols, x, nTok, scratch))
	return dst
}

// dotOperand returns x as the dot product sees it: converted to the dot
// type of weights of type dt (binary16, bfloat16, Q8_0, Q8_1 or Q8_K) and
// widened back.
func dotOperand(t *testing.T, dt gguf.TensorType, x []float32, cols int) []float32 {
	vt := quant.VecDotType(dt)
	if vt == gguf.TypeF32 {
		return x
	}
	out := make([]float32, len(x))
	for r := 0; r < len(x); r += cols {
		b, err := quant.QuantizeAlloc(vt, x[r:r+cols])
		require.NoError(t, err)
		require.NoError(t, quant.Dequantize(vt, b, out[r:r+cols]))
	}
	return out
}

// termScale is a matmul's error scale: Σₖ |wₖ|·|aₖ| per output, with the
// weights dequantized and the activations as the dot product sees them.
func termScale(t *testing.T, w *tensor, dt gguf.TensorType, x []float32, nTok int) []float64 {
	a := dotOperand(t, dt, x, w.cols)
	rows := len(w.vals) / w.cols
	s := make([]float64, nTok*rows)
	for tk := range nTok {
		ar := a[tk*w.cols : (tk+1)*w.cols]
		for r := range rows {
			var sum float64
			for k, v := range w.row(r) {
				sum += math.Abs(float64(v) * float64(ar[k]))
			}
			s[tk*rows+r] = sum
		}
	}
	return s
}

// matmulShapes returns the inner dimensions for type dt and the output
// row counts: the table widths, and outside -short a model-sized row (the
// largest K the default tolerances are stated for).
func (s *suite) matmulShapes(dt gguf.TensorType) (ks, ns []int) {
	ks = s.tableCols(dt)
	if !s.short {
		if dt.BlockSize() == 1 {
			ks = append(ks, 1021)
		} else {
			ks = append(ks, 1024)
		}
	}
	return ks, s.outRows()
}

func testMatMul(t *testing.T, s *suite) {
	for _, dt := range weightTypes {
		t.Run(typeName(dt), func(t *testing.T) {
			ks, ns := s.matmulShapes(dt)
			for _, k := range ks {
				for _, n := range ns {
					t.Run(fmt.Sprintf("K=%d,N=%d", k, n), func(t *testing.T) {
						b := s.builder(t)
						x := b.activation("x", k, actDist)
						w := b.weight("w", dt, spread, n, k)
						out := b.op(ops.MatMul, "matmul", nil, x, w)
						p := b.finish(out, out, ops.MatMul, typeName(dt))
						s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
							xs := b.gather("x", tokens)
							return refMatMul(t, b.ws["w"], dt, xs, len(tokens)), termScale(t, b.ws["w"], dt, xs, len(tokens))
						})
					})
				}
			}
		})
	}
}

func testMatMulAdd(t *testing.T, s *suite) {
	for _, dt := range weightTypes {
		t.Run(typeName(dt), func(t *testing.T) {
			ks, ns := s.matmulShapes(dt)
			k, n := ks[0], ns[len(ns)-1]
			t.Run(fmt.Sprintf("K=%d,N=%d", k, n), func(t *testing.T) {
				b := s.builder(t)
				x := b.activation("x", k, actDist)
				w := b.weight("w", dt, spread, n, k)
				r := b.activation("r", n, unit)
				out := b.op(ops.MatMulAdd, "matmul_add", nil, x, w, r)
				p := b.finish(out, out, ops.MatMulAdd, typeName(dt))
				s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
					xs, rs := b.gather("x", tokens), b.gather("r", tokens)
					want := refMatMul(t, b.ws["w"], dt, xs, len(tokens))
					ref.Add(want, want, rs)
					scale := termScale(t, b.ws["w"], dt, xs, len(tokens))
					for i := range scale {
						scale[i] += math.Abs(float64(want[i])) + math.Abs(float64(rs[i]))
					}
					return want, scale
				})
			})
		})
	}
}

// testMatMulBias tests x·wᵀ + b with a bias row of the product's width,
// at every weight type and the default shape's largest output row count.
func testMatMulBias(t *testing.T, s *suite) {
	for _, dt := range weightTypes {
		t.Run(typeName(dt), func(t *testing.T) {
			ks, ns := s.matmulShapes(dt)
			k, n := ks[0], ns[len(ns)-1]
			t.Run(fmt.Sprintf("K=%d,N=%d", k, n), func(t *testing.T) {
				b := s.builder(t)
				x := b.activation("x", k, actDist)
				w := b.weight("w", dt, spread, n, k)
				bias := b.weight("b", gguf.TypeF32, unit, n)
				out := b.op(ops.MatMulBias, "matmul_bias", nil, x, w, bias)
				p := b.finish(out, out, ops.MatMulBias, typeName(dt))
				s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
					xs, bs := b.gather("x", tokens), b.ws["b"].vals
					want := refMatMul(t, b.ws["w"], dt, xs, len(tokens))
					ref.Add(want, want, bs)
					scale := termScale(t, b.ws["w"], dt, xs, len(tokens))
					for i := range scale {
						scale[i] += math.Abs(float64(want[i])) + math.Abs(float64(bs[i%n]))
					}
					return want, scale
				})
			})
		})
	}
}

// gateAct is one gated feed-forward: the fused op, the activation and
// its error scale per element (how far act moves for the gate's error,
// and its own rounding).
type gateAct struct {
	op  string
	act func(dst, x []float32)
	// scale returns the bound's terms for gate product g (error scale sg)
	// with activation a = act(g), times |u|, plus a's error times su.
	scale func(g, a, u, sg, su float64) float64
}

var (
	// silu'(g) ≤ 1.1 carries the gate's error, silu(g) the up product's.
	swiGLU = gateAct{ops.MatMulGateUpSwiGLU, ref.SiLU, func(g, a, u, sg, su float64) float64 {
		return 1.1*sg*math.Abs(u) + math.Abs(a)*su
	}}
	// gelu'(g) ≤ 1.13 carries the gate's error; the table rounds g and
	// its result to binary16, so a gate off by an ulp may move a by one
	// binary16 step of g and of a: 2⁻¹⁰·(|g|+|a|)·|u|, written as 2⁴
	// units of the matmul bound 2⁻¹⁴.
	geGLU = gateAct{ops.MatMulGateUpGeGLU, ref.GELU, func(g, a, u, sg, su float64) float64 {
		return 1.13*sg*math.Abs(u) + math.Abs(a)*su + 16*(math.Abs(g)+math.Abs(a))*math.Abs(u)
	}}
)

// testGateUp tests a fused gated feed-forward, act(x·wgᵀ)·(x·wuᵀ).
func testGateUp(ga gateAct) func(t *testing.T, s *suite) {
	return func(t *testing.T, s *suite) {
		for _, dt := range weightTypes {
			t.Run(typeName(dt), func(t *testing.T) {
				ks, ns := s.matmulShapes(dt)
				k, n := ks[len(ks)-1], ns[len(ns)-1]
				t.Run(fmt.Sprintf("K=%d,N=%d", k, n), func(t *testing.T) {
					b := s.builder(t)
					x := b.activation("x", k, actDist)
					wg := b.weight("gate", dt, spread, n, k)
					wu := b.weight("up", dt, spread, n, k)
					out := b.op(ga.op, "gate_up", nil, x, wg, wu)
					p := b.finish(out, out, ga.op, typeName(dt))
					s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
						xs, nt := b.gather("x", tokens), len(tokens)
						g := refMatMul(t, b.ws["gate"], dt, xs, nt)
						u := refMatMul(t, b.ws["up"], dt, xs, nt)
						act := make([]float32, len(g))
						for r := 0; r < len(g); r += n {
							ga.act(act[r:r+n], g[r:r+n]) // row by row, as ggml
						}
						want := make([]float32, len(g))
						ref.Mul(want, act, u)
						// |want| covers the activation's own rounding.
						sg, su := termScale(t, b.ws["gate"], dt, xs, nt), termScale(t, b.ws["up"], dt, xs, nt)
						scale := make([]float64, len(g))
						for i := range scale {
							scale[i] = ga.scale(float64(g[i]), float64(act[i]), float64(u[i]), sg[i], su[i]) + math.Abs(float64(want[i]))
						}
						return want, scale
					})
				})
			})
		}
	}
}

// qkvCase is one fused projection: the three weights' types and the inner
// dimension they share.
type qkvCase struct {
	types [3]gguf.TensorType
	k     int
}

func (c qkvCase) name() string {
	if c.types[0] == c.types[1] && c.types[1] == c.types[2] {
		return typeName(c.types[0])
	}
	var parts []string
	for _, t := range c.types {
		parts = append(parts, typeName(t))
	}
	return strings.Join(parts, "+")
}

// qkvRows are the three parts' row counts: none a multiple of 16.
var qkvRows = [3]int{37, 21, 21}

func testQKV(t *testing.T, s *suite) {
	var cases []qkvCase
	for _, dt := range weightTypes {
		cases = append(cases, qkvCase{[3]gguf.TensorType{dt, dt, dt}, s.tableCols(dt)[0]})
	}
	// Mixed types as in Q4_K_M models (V in Q6_K), and three dot-product
	// types at once (activations quantized once per type).
	cases = append(cases,
		qkvCase{[3]gguf.TensorType{gguf.TypeQ4_K, gguf.TypeQ4_K, gguf.TypeQ6_K}, 256},
		qkvCase{[3]gguf.TensorType{gguf.TypeQ4_0, gguf.TypeF16, gguf.TypeQ4_1}, 96})
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			for part, pn := range []string{"q", "k", "v"} {
				t.Run(fmt.Sprintf("K=%d/%s", c.k, pn), func(t *testing.T) { s.runQKV(t, c, part, false) })
			}
		})
	}
}

// testPart reads every part of a fused projection, with the Part node as
// the node under test.
func testPart(t *testing.T, s *suite) {
	c := qkvCase{[3]gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ8_0, gguf.TypeQ8_0}, 64}
	for part, pn := range []string{"q", "k", "v"} {
		t.Run(pn, func(t *testing.T) { s.runQKV(t, c, part, true) })
	}
}

// runQKV tests part (0: q, 1: k, 2: v) of a MatMulQKV read through Part,
// the only way a fused projection's result is read.
func (s *suite) runQKV(t *testing.T, c qkvCase, part int, partUnderTest bool) {
	b := s.builder(t)
	x := b.activation("x", c.k, actDist)
	names := [3]string{"wq", "wk", "wv"}
	in := []int{x}
	for i, dt := range c.types {
		in = append(in, b.weight(names[i], dt, spread, qkvRows[i], c.k))
	}
	qkv := b.op(ops.MatMulQKV, "qkv", nil, in...)
	start := 0
	for i := range part {
		start += qkvRows[i]
	}
	// Every part gets a Part node, as the fusion pass makes them; the
	// one under test is selected.
	var parts [3]int
	off := 0
	for i := range 3 {
		parts[i] = b.op(ops.Part, "qkv."+names[i], graph.Attrs{"start": float64(off), "width": float64(qkvRows[i])}, qkv)
		off += qkvRows[i]
	}
	p := b.finish(parts[part], qkv, ops.MatMulQKV, c.name())
	if partUnderTest {
		p.node, p.op, p.variant = parts[part], ops.Part, ""
	}
	w, dt := b.ws[names[part]], c.types[part]
	s.runStateless(t, p, func(tokens []int32, _ int) ([]float32, []float64) {
		xs := b.gather("x", tokens)
		return refMatMul(t, w, dt, xs, len(tokens)), termScale(t, w, dt, xs, len(tokens))
	})
}
