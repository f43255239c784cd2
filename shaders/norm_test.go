//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// A decode step's RMSNormMul folded into the matvecs around it
// (matvec.comp NORM_OUT and NORM_IN). The residual's matvec
// (matvec_add_T_nq) writes what matvec_add_T writes, and its last
// workgroup of each 32 rows the block of u = h·w as Q8_0 with a float32
// scale and, after the row's blocks, the block's Σh² in index order: both
// checked bit for bit against a Go replica (q8_lanes's arithmetic:
// correctly rounded divisions, ties away from zero). Its readers (matvec_nq_T, matvec_qkv_nq_T, matvec_gateup_nq_T and the
// gate·up writing its down's Q8_0) sum the blocks' Σh², scale every block
// by 1/sqrt(Σ/n + eps) and round it to binary16: each output must lie
// within 1e-7 + 4e-6·Σ|w·x| of the plain variant fed the same blocks
// scaled on the host (by a float32 factor a few ulp from the exact one:
// the GPU's square root and sums differ), and within TestMatMul's
// tolerance plus the activations' quantization steps of ref.RMSNorm·w
// then ref.MatMul. Rows of 17 blocks and of 64, odd rows, operands at odd
// offsets, and a zero block (d = 0).
//
// The K-quants (Q4_K, Q5_K, Q6_K: Q8_K activations) take NORM_K: the
// producer (matvec_add_T_nqk) writes per 256 rows the Q8_K super-block of
// u (quant.QuantizeRow's bits, the scale a float32) and still the Σh² of
// each 32 rows (8 partial sums of 4, normBlocksK); its readers scale each
// super-block's float32 scale by the factor, not rounded. Rows of 3, 8
// and 1 super-blocks, a zero super-block.
func TestMatVecNorm(t *testing.T) {
	e := newEnv(t)
	const eps, xoff, nwoff, doff, roff, qoff, aoff = 1e-5, 5, 3, 3, 7, 2, 4
	for _, wt := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ5_K} {
		cases := []struct{ rows, cols int }{{544, 96}, {2048, 2048}, {96, 544}}
		// Blocks: the norm's activations' (Q8_0: 32 values, 9 words; Q8_K:
		// 256 values, 73 words); out: the producer's suffix.
		bv, bw, out := 32, 9, "_nq"
		if kQuant(wt) {
			cases = []struct{ rows, cols int }{{768, 256}, {2048, 2048}, {256, 768}}
			bv, bw, out = 256, 73, "_nqk"
		}
		for _, c := range cases {
			specs := []string{"#1"}
			if e.twoRows() {
				specs = append(specs, "#1,2")
			}
			for _, spec := range specs {
				label := fmt.Sprintf("%s %dx%d %s", typeName(wt), c.rows, c.cols, spec)
				per := matvecRows(strings.TrimPrefix(spec, "#"))
				// The producer: rows of h = W·x + res; the norm's rows are its
				// c.rows outputs.
				n := c.rows
				rawW, _ := e.weights(wt, n, c.cols)
				wb := e.buf(len(rawW), rawW)
				xb, xo := e.activations(wt, e.random(c.cols), 1, c.cols)
				res := e.random(n)
				if n >= 64 {
					for i := 32; i < 64; i++ {
						res[i] = 0 // with zero weights below: a zero block
					}
				}
				rb := e.place(roff, res)
				nw := e.random(n)
				if n >= 64 {
					clear(nw[32:64])
				}
				if kQuant(wt) && n >= 512 {
					clear(nw[256:512]) // a zero super-block
				}
				nwb := e.place(nwoff, nw)
				groups := e.rows((n + per - 1) / per)
				d1, d2 := e.out(doff+n+4), e.out(doff+n+4)
				e.run("matvec_add_"+typeName(wt)+spec, groups, pushWords(c.cols, n, 1, xo, doff, roff, n), wb, xb, d1, rb)
				nb, ns := n/bv, n/32 // blocks, sums
				words := nb*bw + ns
				qb, cnt := e.out(qoff+words), e.words(make([]uint32, nb), 0)
				// the producer's own activations in the same buffer as its output blocks, as in a decode step
				e.run("matvec_add_"+typeName(wt)+out+spec, groups, pushWords(c.cols, n, 1, xo, doff, roff, n, qoff, nwoff), wb, xb, d2, rb, qb, cnt, nwb)
				// The values are matvec_add's up to the products' contraction
				// (NVIDIA's compiler fuses them differently in other variants).
				h, h1 := e.readAt(d2, doff, n), e.readAt(d1, doff, n)
				for i := range h {
					require.True(t, close(float64(h[i]), float64(h1[i]), 1e-5, 1e-5), "matvec_add_nq %s: value %d: %g, matvec_add %g", label, i, h[i], h1[i])
				}
				blocks := f32Bits(e.readAt(qb, qoff, words))
				want := normBlocks(h, nw)
				if kQuant(wt) {
					want = normBlocksK(h, nw)
				}
				require.Equal(t, want, blocks, "matvec_add_nq %s: the norm's blocks", label)
				// Again: the counters are back where they started.
				e.run("matvec_add_"+typeName(wt)+out+spec, groups, pushWords(c.cols, n, 1, xo, doff, roff, n, qoff, nwoff), wb, xb, d2, rb, qb, cnt, nwb)
				require.Equal(t, blocks, f32Bits(e.readAt(qb, qoff, words)), "matvec_add_nq %s: the norm's blocks, second run", label)

				// The readers: rows of the norm's n values. The factor from the
				// blocks' Σh² in float64; the GPU's (float32 sums, sqrt) may
				// lie a few ulp away: the blocks are scaled on the host by each
				// of the seven float32 values around it, and the reader must
				// match one of them on every row.
				var ss float64
				for b := range ns {
					ss += float64(math.Float32frombits(want[nb*bw+b]))
				}
				scale0 := float32(1 / math.Sqrt(ss/float64(n)+eps))
				xn := make([]float32, n)
				ref.RMSNorm(xn, h, n, eps)
				ref.Mul(xn, xn, nw)
				ab := e.words(blocks, aoff)
				rows := 67
				rawA, af := e.weights(wt, rows, n)
				rawB, bf := e.weights(wt, rows, n)
				ag, bg := e.buf(len(rawA), rawA), e.buf(len(rawB), rawB)
				mag := func(w []float32) []float64 {
					m := make([]float64, rows)
					for r := range rows {
						for k := range n {
							m[r] += math.Abs(float64(w[r*n+k]) * float64(xn[k]))
						}
					}
					return m
				}
				magA, magB := mag(af), mag(bf)
				g := e.rows((rows + per - 1) / per)
				o1, o2 := e.out(doff+rows+4), e.out(doff+rows+4)
				e.run("matvec_nq_"+typeName(wt)+spec, g, pushWords(n, rows, 1, aoff, doff, 0, rows, float32(eps)), ag, ab, o2)
				got := e.readAt(o2, doff, rows)
				var sb *vulkan.Buffer
				var near []float32
				for k := -3; k <= 3 && sb == nil; k++ {
					scale := math.Float32frombits(uint32(int32(math.Float32bits(scale0)) + int32(k)))
					scaled := append([]uint32(nil), blocks[:nb*bw]...)
					for b := range nb {
						d := math.Float32frombits(scaled[bw*b]) * scale
						if !kQuant(wt) {
							d = quant.FP16ToFP32(quant.FP32ToFP16(d))
						}
						scaled[bw*b] = math.Float32bits(d)
					}
					b := e.words(scaled, aoff)
					e.run("matvec_"+typeName(wt)+spec, g, pushWords(n, rows, 1, aoff, doff, 0, rows), ag, b, o1)
					near = e.readAt(o1, doff, rows)
					ok := true
					for r := range rows {
						ok = ok && close(float64(got[r]), float64(near[r]), 1e-7+4e-6*magA[r], 0)
					}
					if ok {
						sb = b
					}
				}
				require.NotNil(t, sb, "matvec_nq %s: no factor within 3 ulp of %g gives its outputs (%v, last host-scaled %v)", label, scale0, got[:4], near[:4])
				exact := make([]float32, rows)
				scratch := make([]float32, (ref.ActScratchBytes(wt, n, 1)+3)/4)
				require.NoError(t, ref.MatMul(exact, rawA, wt, rows, n, xn, 1, unsafeBytes(scratch)))
				for r := range rows {
					// ref.MatMul quantizes the normalised values itself: the levels
					// may differ by one at a tie, and the scales by binary16 rounding.
					require.True(t, close(float64(got[r]), float64(exact[r]), 1e-6+2e-3*magA[r], 0), "matvec_nq %s row %d: got %g, reference %g", label, r, got[r], exact[r])
				}
				e.run("matvec_gateup_"+typeName(wt)+spec, g, pushWords(n, rows, 1, aoff, doff, 0, rows), ag, sb, o1, bg)
				e.run("matvec_gateup_nq_"+typeName(wt)+spec, g, pushWords(n, rows, 1, aoff, doff, 0, rows, float32(eps)), ag, ab, o2, bg)
				got, near = e.readAt(o2, doff, rows), e.readAt(o1, doff, rows)
				for r := range rows {
					require.True(t, close(float64(got[r]), float64(near[r]), 1e-6+1e-5*(magA[r]+magB[r])*(1+math.Abs(float64(near[r]))), 0), "matvec_gateup_nq %s row %d: got %g, host-scaled %g", label, r, got[r], near[r])
				}
				// QKV: three weights in one buffer, rows of padding between
				qr := [3]int{rows, 13, 9}
				start := [3]int{0, rows + 2, rows + 2 + 13 + 1}
				rbytes, err := wt.RowBytes(uint64(n))
				require.NoError(t, err)
				all, _ := e.weights(wt, start[2]+qr[2], n)
				packed := pad4(all[:(start[2]+qr[2])*int(rbytes)])
				pb := e.buf(len(packed), packed)
				const mtok = 3
				total := mtok * (qr[0] + qr[1] + qr[2])
				q1, q2 := e.out(doff+total+4), e.out(doff+total+4)
				nq := start[2] + qr[2]
				qg := e.rows((nq + per - 1) / per)
				e.run("matvec_qkv_"+typeName(wt)+spec, qg, pushWords(n, nq, 1, aoff, doff, 0, 0, qr[0], start[1], qr[1], start[2], mtok), pb, sb, q1)
				e.run("matvec_qkv_nq_"+typeName(wt)+spec, qg, pushWords(n, nq, 1, aoff, doff, 0, 0, qr[0], start[1], qr[1], start[2], mtok, float32(eps)), pb, ab, q2)
				gq, nqv := e.readAt(q2, doff, total), e.readAt(q1, doff, total)
				for i := range gq {
					if math.IsNaN(float64(nqv[i])) {
						require.True(t, math.IsNaN(float64(gq[i])), "matvec_qkv_nq %s: output %d written", label, i)
						continue
					}
					require.True(t, close(float64(gq[i]), float64(nqv[i]), 1e-5*(1+math.Abs(float64(nqv[i]))), 0), "matvec_qkv_nq %s output %d: got %g, host-scaled %g", label, i, gq[i], nqv[i])
				}
			}
		}
	}
}

// normBlocks is matvec_add_T_nq's output for rows h and norm weight w:
// per block of 32, u = h·w quantized as q8_lanes does (the scale d =
// max|u|/127 kept as a float32), then every block's Σh² in index order.
func normBlocks(h, w []float32) []uint32 {
	nb := len(h) / 32
	out := make([]uint32, nb*9+nb) // the factor after them is not replicated
	for b := range nb {
		var u [32]float32
		var amax, ss float32
		for j := range 32 {
			u[j] = float32(h[32*b+j] * w[32*b+j])
			amax = max(amax, float32(math.Abs(float64(u[j]))))
			ss += float32(h[32*b+j] * h[32*b+j])
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		out[9*b] = math.Float32bits(d)
		for k := range 8 {
			var word uint32
			for j := range 4 {
				q := int32(roundAway(float32(u[4*k+j] * id)))
				word |= uint32(uint8(int8(q))) << (8 * j)
			}
			out[9*b+1+k] = word
		}
		out[nb*9+b] = math.Float32bits(ss)
	}
	return out
}

// normBlocksK is matvec_add_T_nqk's output for rows h and norm weight w:
// per 256 values, u = h·w as the Q8_K super-block quant.QuantizeRow
// writes (the first largest |u| sets the scale), then the Σh² of every 32
// values: the sum in order of 8 partial sums of 4 values in index order.
func normBlocksK(h, w []float32) []uint32 {
	nb, ns := len(h)/256, len(h)/32
	out := make([]uint32, nb*73+ns)
	u := make([]float32, 256)
	blk := make([]byte, 292)
	for b := range nb {
		for j := range 256 {
			u[j] = float32(h[256*b+j] * w[256*b+j])
		}
		quant.QuantizeRow(gguf.TypeQ8_K, u, blk)
		for k := range 73 {
			out[73*b+k] = uint32(blk[4*k]) | uint32(blk[4*k+1])<<8 | uint32(blk[4*k+2])<<16 | uint32(blk[4*k+3])<<24
		}
	}
	for b := range ns {
		var ss float32
		for k := range 8 { // 8 partial sums of 4 rows, each in index order
			var p float32
			for j := range 4 {
				i := 32*b + 4*k + j
				p += float32(h[i] * h[i])
			}
			ss += p
		}
		out[nb*73+b] = math.Float32bits(ss)
	}
	return out
}

// roundAway is C's roundf.
func roundAway(x float32) float32 {
	t := float32(math.Trunc(float64(x)))
	if math.Abs(float64(x-t)) >= 0.5 {
		return t + float32(math.Copysign(1, float64(x)))
	}
	return t
}
