package ref

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// flashCache makes a cache of type typ ("f16", "q8_0", "q4_0", "f32") for
// rows of width values and stores rows in it.
func flashCache(typ string, rows [][]float32, width, capacity int) KV {
	c := KV{RowLen: width}
	switch typ {
	case "f16":
		c.F16 = make([]uint16, capacity*width)
	case "f32":
		c.F32 = make([]float32, capacity*width)
	default:
		c.QType = gguf.TypeQ8_0
		if typ == "q4_0" {
			c.QType = gguf.TypeQ4_0
		}
		c.Quant = make([]byte, capacity*c.rowBytes())
	}
	for p, r := range rows {
		c.Store(p, r)
	}
	return c
}

// cached returns element i of row p as c holds it, widened independently
// of FlashAttention (package quant's conversions).
func cached(c KV, p, i int) float64 {
	switch {
	case c.F16 != nil:
		return float64(quant.FP16ToFP32(c.F16[p*c.RowLen+i]))
	case c.F32 != nil:
		return float64(c.F32[p*c.RowLen+i])
	}
	row := make([]float32, c.RowLen)
	rb := c.rowBytes()
	if err := quant.Dequantize(c.QType, c.Quant[p*rb:(p+1)*rb], row); err != nil {
		panic(err)
	}
	return float64(row[i])
}

// TestFlashAttentionAgainstFloat64 recomputes every output in float64
// from the cached K and V and the converted query, with a plain softmax.
// The tolerance is the worst case of the binary16 accumulator (each of
// the N multiply-adds and rescales rounds it by at most 2⁻¹¹ of a value
// no larger than max|v| once normalised) or 1e-5 relative for float32
// accumulation: it catches any indexing, masking, scaling or online
// softmax error, not the last bits (the llama.cpp references do that).
func TestFlashAttentionAgainstFloat64(t *testing.T) {
	rng := newRNG(t)
	type tc struct {
		k, v                                string
		nTok, pos0, nHead, nKVHead, headDim int
		window                              int
		softCap                             float32
	}
	cases := []tc{
		{"f16", "f16", 1, 0, 1, 1, 8, 0, 0}, {"f16", "f16", 5, 3, 4, 2, 8, 0, 0},
		{"f16", "f16", 3, 70, 8, 2, 64, 9, 0}, {"f16", "f16", 2, 40, 4, 4, 96, 0, 1.5},
		{"q8_0", "q8_0", 4, 33, 8, 2, 64, 0, 0}, {"q4_0", "q4_0", 3, 50, 4, 1, 32, 7, 0},
		{"q8_0", "f16", 1, 200, 4, 2, 128, 0, 2}, {"f16", "q4_0", 6, 10, 6, 3, 64, 0, 0},
		{"q8_0", "f32", 2, 20, 2, 1, 96, 0, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-%s/tok%d@%d/h%d-%d/hd%d/w%d/cap%g", c.k, c.v, c.nTok, c.pos0, c.nHead, c.nKVHead, c.headDim, c.window, c.softCap), func(t *testing.T) {
			n, width := c.pos0+c.nTok, c.nKVHead*c.headDim
			kr, vr := make([][]float32, n), make([][]float32, n)
			for p := range n {
				kr[p], vr[p] = randVec(rng, width, 1.5), randVec(rng, width, 1)
			}
			k, v := flashCache(c.k, kr, width, n+3), flashCache(c.v, vr, width, n+3)
			q := randVec(rng, c.nTok*c.nHead*c.headDim, 1.5)
			scale := float32(1 / math.Sqrt(float64(c.headDim)))
			out := make([]float32, len(q))
			poison(out)
			s := NewFlashScratch(c.headDim)
			o := AttnOptions{Window: c.window, SoftCap: c.softCap}
			FlashAttention(out, q, k, v, c.nTok, c.pos0, c.nHead, c.nKVHead, c.headDim, scale, o, s)
			group := c.nHead / c.nKVHead
			for tk := range c.nTok {
				visible, first := c.pos0+tk+1, 0
				if c.window > 0 {
					first = max(0, visible-c.window)
				}
				for h := range c.nHead {
					slot := (tk*c.nHead + h) * c.headDim
					qc := ConvertFlashQuery(k, q[slot:slot+c.headDim], NewFlashScratch(c.headDim))
					qv := make([]float64, c.headDim)
					if qc.Half != nil {
						for i, x := range qc.Half {
							qv[i] = float64(x)
						}
					} else {
						tmp := make([]float32, c.headDim)
						require.NoError(t, quant.Dequantize(gguf.TypeQ8_0, qc.Q8, tmp))
						for i, x := range tmp {
							qv[i] = float64(x)
						}
					}
					off := h / group * c.headDim
					w := make([]float64, visible)
					maxs, sum := math.Inf(-1), 0.0
					for p := first; p < visible; p++ {
						var d float64
						for i := range c.headDim {
							d += qv[i] * cached(k, p, off+i)
						}
						d *= float64(scale)
						if c.softCap > 0 {
							d = float64(c.softCap) * math.Tanh(d/float64(c.softCap))
						}
						w[p] = d
						maxs = max(maxs, d)
					}
					for p := first; p < visible; p++ {
						w[p] = math.Exp(w[p] - maxs)
						sum += w[p]
					}
					for i := range c.headDim {
						var want, vmax float64
						for p := first; p < visible; p++ {
							x := cached(v, p, off+i)
							want += w[p] / sum * x
							vmax = max(vmax, math.Abs(x))
						}
						tol := 1e-5 * (vmax + 1)
						if c.v == "f16" {
							tol = float64(visible-first+2) * 0x1p-11 * vmax
						}
						within(t, fmt.Sprintf("token %d head %d elem %d", tk, h, i), out[slot+i], want, tol)
					}
				}
			}
		})
	}
}

// TestFlashAttentionNearAttention checks that with an F16 cache flash
// attention and Attention (llama.cpp with and without -fa) agree to the
// rounding of the binary16 accumulator.
func TestFlashAttentionNearAttention(t *testing.T) {
	rng := newRNG(t)
	nTok, pos0, nHead, nKVHead, hd := 4, 60, 4, 2, 64
	n, width := pos0+nTok, nKVHead*hd
	kr, vr := make([][]float32, n), make([][]float32, n)
	for p := range n {
		kr[p], vr[p] = randVec(rng, width, 1.5), randVec(rng, width, 1)
	}
	k, v := flashCache("f16", kr, width, n), flashCache("f16", vr, width, n)
	q := randVec(rng, nTok*nHead*hd, 1.5)
	a, b := make([]float32, len(q)), make([]float32, len(q))
	Attention(a, q, k, v, nTok, pos0, nHead, nKVHead, hd, 0.125, make([]float32, AttentionScratch(nTok, pos0)))
	FlashAttention(b, q, k, v, nTok, pos0, nHead, nKVHead, hd, 0.125, AttnOptions{}, NewFlashScratch(hd))
	worst := 0.0
	for i := range a {
		worst = max(worst, math.Abs(float64(a[i]-b[i])))
	}
	t.Logf("max |flash − attention| %.3g", worst)
	require.Less(t, worst, 0.02)
	require.Greater(t, worst, 0.0, "identical bits: is the binary16 accumulator rounded?")
}

// TestQuantizeRowQ8_0 checks ggml-cpu's vector Q8_0 quantizer against
// package quant's reference one: the same scale, values within one step
// (they differ only at rounding ties and in 127/amax against 1/d).
func TestQuantizeRowQ8_0(t *testing.T) {
	rng := newRNG(t)
	x := randVec(rng, 32*40, 3)
	x[5], x[40] = 0.5*x[3], 0 // ties and zeros do occur
	clear(x[64:96])           // an all-zero block: d = 0, id = 0
	got, want := make([]byte, 40*34), make([]byte, 40*34)
	QuantizeRowQ8_0(x, got)
	quant.QuantizeRow(gguf.TypeQ8_0, x, want)
	diffs := 0
	for b := range 40 {
		require.Equal(t, want[b*34:b*34+2], got[b*34:b*34+2], "block %d scale", b)
		for j := 2; j < 34; j++ {
			d := int(int8(got[b*34+j])) - int(int8(want[b*34+j]))
			require.LessOrEqual(t, d*d, 1, "block %d value %d", b, j-2)
			if d != 0 {
				diffs++
			}
		}
	}
	t.Logf("%d of %d values differ by one step", diffs, len(x))
}

// TestVecDotQ0 checks the AVX2 lane order against package quant's serial
// block sums: equal to float32 rounding.
func TestVecDotQ0(t *testing.T) {
	rng := newRNG(t)
	for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_0} {
		for _, n := range []int{32, 64, 128, 256} {
			x, y := randVec(rng, n, 2), randVec(rng, n, 1)
			xq, yq := make([]byte, n/32*34), make([]byte, n/32*34)
			quant.QuantizeRow(typ, x, xq)
			QuantizeRowQ8_0(y, yq)
			got, want := VecDotQ0(typ, n, xq, yq), quant.VecDot(typ, n, xq, yq)
			require.InDelta(t, want, got, 1e-5*float64(n), "%s n=%d", typ, n)
		}
	}
}
