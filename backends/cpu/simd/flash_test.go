package simd

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// TestFlashMad holds FlashMadF16 and FlashMadF32 to ref.FlashMad bit for
// bit on every variant, for lengths with and without a scalar tail.
func TestFlashMad(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, name := range Variants() {
		restore, _ := withVariant(name)
		for _, n := range []int{8, 32, 64, 96, 128, 200, 256} {
			for _, f16 := range []bool{true, false} {
				acc, x := make([]float32, n), make([]float32, n)
				for i := range acc {
					acc[i] = float32(rng.NormFloat64())
					x[i] = float32(rng.NormFloat64())
					if f16 {
						acc[i] = quant.FP16ToFP32(quant.FP32ToFP16(acc[i]))
						x[i] = quant.FP16ToFP32(quant.FP32ToFP16(x[i]))
					}
				}
				vs := float32(rng.Float64())
				want := append([]float32{}, acc...)
				ref.FlashMad(want, x, vs, f16)
				if f16 {
					xb := make([]byte, 2*n)
					quant.FP32ToFP16Row(x, xb)
					FlashMadF16(acc, xb, vs, make([]float32, n))
				} else {
					FlashMadF32(acc, x, vs)
				}
				for i := range acc {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(acc[i]), "%s n=%d f16=%v element %d", name, n, f16, i)
				}
			}
		}
		restore()
	}
}

// flashExpInputs returns arguments like the tiled path's (both signs,
// mostly small) with the edges mixed in: ±0, the 87 boundary and beyond,
// ±Inf, NaN.
func flashExpInputs(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch rng.IntN(8) {
		case 0:
			x[i] = float32(rng.ExpFloat64() * 40)
		case 1:
			x[i] = float32(rng.Float64() * 1e-6)
		case 2:
			edges := []float32{0, 87, 87.00001, 86.99999, 88, 103.9, 200, float32(math.Inf(1)), float32(math.NaN()), 1e-30,
				1.0149802} // a double within 2¹⁰ ulps of a float32 rounding boundary
			x[i] = edges[rng.IntN(len(edges))]
		default:
			x[i] = float32(rng.ExpFloat64() * 3)
		}
		if rng.IntN(3) > 0 {
			x[i] = -x[i]
		}
	}
	return x
}

// flashExpWant is FlashExp's definition.
func flashExpWant(v float32) float32 {
	e := float32(math.Exp(-math.Abs(float64(v))))
	return math.Float32frombits(math.Float32bits(e) | math.Float32bits(v)&(1<<31))
}

// TestFlashExp holds FlashExp to ops/ref's expf of −|x| with x's sign,
// bit for bit, on every variant, over lengths that leave tails and span
// several kernel calls.
func TestFlashExp(t *testing.T) {
	rng := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, n := range []int{1, 15, 16, 33, 300, 1024, 1040, 5000} {
			x := flashExpInputs(rng, n)
			got := make([]float32, n)
			FlashExp(x, got)
			for i, v := range x {
				want := flashExpWant(v)
				if v != v { // NaN: any NaN
					require.True(t, got[i] != got[i], "n=%d x[%d]=%g: %g", n, i, v, got[i])
					continue
				}
				require.Equal(t, math.Float32bits(want), math.Float32bits(got[i]), "n=%d x[%d]=%g", n, i, v)
			}
		}
	})
}

// TestFlashExpDense compares FlashExp with the scalar exponential on
// every 997th float32 of [−87, −2⁻²⁶] (WEFT_FLASH_EXP_ALL=1: every
// float32 of [−87, 0], about 1.1e9 values, some 15 s).
func TestFlashExpDense(t *testing.T) {
	lo, hi := math.Float32bits(-0x1p-26), math.Float32bits(-87)
	step := uint32(997)
	if os.Getenv("WEFT_FLASH_EXP_ALL") == "1" {
		step, lo = 1, math.Float32bits(float32(math.Copysign(0, -1)))
	}
	x, got := make([]float32, 0, 1<<16), make([]float32, 1<<16)
	check := func() {
		FlashExp(x, got)
		for i, v := range x {
			if want := flashExpWant(v); math.Float32bits(want) != math.Float32bits(got[i]) {
				t.Fatalf("exp(%g) = %g, want %g", v, got[i], want)
			}
		}
		x = x[:0]
	}
	for b := lo; b <= hi; b += step {
		x = append(x, math.Float32frombits(b))
		if len(x) == cap(x) {
			check()
		}
	}
	check()
}

// flashUpdateRef is FlashUpdate as ops/ref's loop writes it, one head.
func flashUpdateRef(typ gguf.TensorType, halfAcc bool, acc []float32, v []byte, vStride int, e []float32, sum *float32) {
	hd := len(acc)
	rb, _ := typ.RowBytes(uint64(hd))
	row := make([]float32, hd)
	f16 := typ == gguf.TypeF16
	half := halfAcc && (f16 || typ == gguf.TypeF32)
	for j, ej := range e {
		ms, vs := float32(1), -ej
		if !math.Signbit(float64(ej)) { // raised the maximum
			ms, vs = ej, 1
			ref.FlashScale(acc, ms, half)
		}
		src := v[j*vStride : j*vStride+int(rb)]
		if f16 {
			quant.FP16ToFP32Row(src, row)
		} else {
			_ = quant.Dequantize(typ, src, row)
		}
		ref.FlashMad(acc, row, vs, half)
		*sum = float32(*sum*ms) + vs // unfused, as ggml
	}
}

// flashUpdateCase is a V type and an accumulator (FlashUpdate's halfAcc).
type flashUpdateCase struct {
	typ     gguf.TensorType
	halfAcc bool
}

// TestFlashUpdate holds FlashUpdate to the reference's per-cell loop
// bit for bit on every variant: F16 and F32 (widened) V rows with
// binary16 and float32 accumulators, Q8_0 and Q4_0 V rows inside a
// wider row (a KV head at an offset), head dims with and without a
// scalar tail, 1 to 9 heads (the kernels take up to 4 at once), raises
// (weights in (0, 1), 0 and exactly 1) at random cells.
func TestFlashUpdate(t *testing.T) {
	rng := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, c := range []flashUpdateCase{{gguf.TypeF16, true}, {gguf.TypeF16, false}, {gguf.TypeQ8_0, false}, {gguf.TypeQ4_0, false}, {gguf.TypeF32, true}, {gguf.TypeF32, false}} {
			typ := c.typ
			for _, hd := range []int{8, 24, 32, 64, 80, 96, 128, 192} {
				if (typ == gguf.TypeQ8_0 || typ == gguf.TypeQ4_0) && hd%32 != 0 {
					continue // quantized rows are whole blocks of 32
				}
				for _, n := range []int{1, 7, 64, 131} {
					nh := 1 + rng.IntN(9)
					hb, _ := typ.RowBytes(uint64(hd))
					stride := 3*int(hb) + 6 // not a multiple of any vector
					v := quantized(t, rng, typ, (n*stride+int(hb))/int(hb)*hd)
					off := int(hb) + 2
					if typ == gguf.TypeQ8_0 || typ == gguf.TypeQ4_0 {
						off = int(hb) // quantized heads start at a block
					}
					eStride := n + 3
					e := make([]float32, nh*eStride)
					for i := range e {
						e[i] = -float32(rng.Float64()) // no raise
						switch rng.IntN(8) {
						case 0:
							e[i] = float32(rng.Float64())
						case 1:
							e[i] = 0
						case 2:
							e[i] = 1
						case 3:
							e[i] = -1
						}
					}
					acc, sum := make([]float32, nh*hd), make([]float32, nh)
					for i := range acc {
						acc[i] = quant.FP16ToFP32(quant.FP32ToFP16(float32(rng.NormFloat64() * 4)))
					}
					for h := range sum {
						sum[h] = float32(rng.Float64() * 10)
					}
					want, wantSum := append([]float32{}, acc...), append([]float32{}, sum...)
					for h := range nh {
						flashUpdateRef(typ, c.halfAcc, want[h*hd:(h+1)*hd], v[off:], stride, e[h*eStride:h*eStride+n], &wantSum[h])
					}
					FlashUpdate(typ, c.halfAcc, acc, hd, v[off:], stride, n, e, eStride, sum, make([]float32, hd))
					for i := range acc {
						require.Equal(t, math.Float32bits(want[i]), math.Float32bits(acc[i]), "%s halfAcc=%v hd=%d n=%d heads=%d element %d", typ, c.halfAcc, hd, n, nh, i)
					}
					for h := range sum {
						require.Equal(t, math.Float32bits(wantSum[h]), math.Float32bits(sum[h]), "%s halfAcc=%v hd=%d n=%d heads=%d sum %d", typ, c.halfAcc, hd, n, nh, h)
					}
				}
			}
		}
	})
}

// TestFlashScoresF16 holds FlashScoresF16 (and FlashScoresF32 over the
// panel widened by FlashWidenK) on every variant to its Go loop
// bit for bit (a score sums exact products in dimension order), and the Go
// loop to a float64 dot product of the same values read from the layout
// independently, on awkward head dimensions, cell counts and head counts.
func TestFlashScoresF16(t *testing.T) {
	rng := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, hd := range []int{1, 7, 64, 80, 128} {
			for _, n := range []int{1, 15, 17, 63, 64, 65, 130} {
				nh := 1 + rng.IntN(9)
				kvHeads := 1 + rng.IntN(3)
				g := rng.IntN(kvHeads)
				blockStride := kvHeads * hd * 2 * FlashKBlock
				blocks := (n + FlashScoreChunk - 1) / FlashScoreChunk * FlashScoreChunk / FlashKBlock
				cache := make([]byte, blocks*blockStride)
				kf := make([]float32, n*hd) // cell j, dimension d of head g
				for j := range n {
					for d := range hd {
						x := quant.FP32ToFP16(float32(rng.NormFloat64()))
						kf[j*hd+d] = quant.FP16ToFP32(x)
						o := j/FlashKBlock*blockStride + 2*FlashKBlock*(g*hd+d) + 2*(j%FlashKBlock)
						cache[o], cache[o+1] = byte(x), byte(x>>8)
					}
				}
				qStride := nh + rng.IntN(3)
				q := make([]float32, hd*qStride)
				for i := range q {
					q[i] = quant.FP16ToFP32(quant.FP32ToFP16(float32(rng.NormFloat64())))
				}
				dstStride := FlashScoreChunk*((n+FlashScoreChunk-1)/FlashScoreChunk) + 5
				dst := make([]float32, nh*dstStride)
				panel := cache[2*FlashKBlock*g*hd:]
				FlashScoresF16(hd, panel, blockStride, n, q, qStride, nh, dst, dstStride)
				for h := range nh {
					for j := range n {
						want := flashScoreF16(hd, panel, blockStride, j, q[h:], qStride)
						got := dst[h*dstStride+j]
						require.Equal(t, math.Float32bits(want), math.Float32bits(got), "hd=%d n=%d heads=%d head %d cell %d", hd, n, nh, h, j)
						var exact, mag float64
						for d := range hd {
							p := float64(q[d*qStride+h]) * float64(kf[j*hd+d])
							exact += p
							mag += math.Abs(p)
						}
						require.InDelta(t, exact, float64(want), 1e-6*mag*float64(hd)+1e-30, "hd=%d head %d cell %d", hd, h, j)
					}
				}
				// The widened panel: the same bits from FlashScoresF32,
				// widened by FlashWidenK or, where it declines, in Go.
				wide := make([]float32, blocks*FlashKBlock*hd+3)
				wide[len(wide)-3] = 42 // past the panel: untouched
				if !FlashWidenK(panel, blockStride, n, hd, wide) {
					for b := range blocks {
						quant.FP16ToFP32Row(panel[b*blockStride:], wide[b*FlashKBlock*hd:(b+1)*FlashKBlock*hd])
					}
				}
				require.Equal(t, float32(42), wide[len(wide)-3])
				dst32 := make([]float32, len(dst))
				FlashScoresF32(hd, wide[:blocks*FlashKBlock*hd], n, q, qStride, nh, dst32, dstStride)
				for h := range nh {
					for j := range n {
						require.Equal(t, math.Float32bits(dst[h*dstStride+j]), math.Float32bits(dst32[h*dstStride+j]), "F32: hd=%d n=%d heads=%d head %d cell %d", hd, n, nh, h, j)
					}
				}
			}
		}
	})
}

// flashScanRef is ops/ref's running maximum over a tile, as FlashScan
// documents it.
func flashScanRef(arg, s []float32, scale, maxv float32) float32 {
	for j, v := range s {
		x := v * scale
		arg[j] = -(maxv - x)
		if x > maxv {
			maxv = x
		}
	}
	return maxv
}

// TestFlashScan holds FlashScan on every variant to the sequential loop
// bit for bit, arguments and final maximum, with ties of +0 and −0, NaN,
// ±Inf and long runs that do and do not raise the maximum.
func TestFlashScan(t *testing.T) {
	rng := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, n := range []int{1, 15, 16, 17, 48, 64, 100} {
			for trial := range 20 {
				s := make([]float32, n)
				for j := range s {
					s[j] = float32(rng.NormFloat64() * 3)
					switch rng.IntN(12) {
					case 0:
						s[j] = 0
					case 1:
						s[j] = float32(math.Copysign(0, -1))
					case 2:
						s[j] = float32(math.NaN())
					case 3:
						s[j] = float32(math.Inf(1 - 2*rng.IntN(2)))
					case 4:
						s[j] = float32(j) // a rising run
					}
				}
				maxv := []float32{float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1.5}[trial%4]
				scale := float32(0.125 + rng.Float64())
				want, got := make([]float32, n), make([]float32, n)
				wantMax := flashScanRef(want, s, scale, maxv)
				gotMax := FlashScan(got, s, scale, maxv)
				require.Equal(t, math.Float32bits(wantMax), math.Float32bits(gotMax), "n=%d trial %d: maximum", n, trial)
				for j := range want {
					require.Equal(t, math.Float32bits(want[j]), math.Float32bits(got[j]), "n=%d trial %d cell %d (score %g)", n, trial, j, s[j])
				}
			}
		}
	})
}

// TestFlashUpdateTailUnfused: past ggml's whole 64-value blocks a binary16
// V's multiply-add is unfused (x·vs rounded, then the add), and a fused one
// gives another binary16 accumulator only rarely, so random inputs seldom
// tell them apart. Each tail column here is searched for until the two
// round differently, and FlashUpdate must give the unfused bits; the same
// with a float32 accumulator, where they differ more often, and with the
// V rows widened to float32 (the F32 kinds).
func TestFlashUpdateTailUnfused(t *testing.T) {
	rng := newRand(t)
	half := func(x float64) float32 { return quant.FP16ToFP32(quant.FP32ToFP16(float32(x))) }
	forEachVariant(t, func(t *testing.T) {
		for _, c := range []flashUpdateCase{{gguf.TypeF16, true}, {gguf.TypeF16, false}, {gguf.TypeF32, true}, {gguf.TypeF32, false}} {
			f32Acc := !c.halfAcc
			acc := func(x float64) float32 { // the accumulator's rounding
				if f32Acc {
					return float32(x)
				}
				return half(x)
			}
			const hd, head = 80, 64 // one 64-value block, a 16-column tail
			vs := float32(rng.Float64())
			a, x := make([]float32, hd), make([]float32, hd)
			for i := range hd {
				a[i], x[i] = half(rng.NormFloat64()), half(rng.NormFloat64())
				for i >= head {
					fused := acc(float64(a[i]) + float64(x[i])*float64(vs)) // exact in float64, one rounding to float32 (then binary16)
					p := float32(x[i] * vs)
					unfused := acc(float64(float32(p + a[i])))
					if fused != unfused {
						break
					}
					a[i], x[i] = half(rng.NormFloat64()), half(rng.NormFloat64())
				}
			}
			v := make([]byte, 2*hd)
			quant.FP32ToFP16Row(x, v)
			if c.typ == gguf.TypeF32 {
				v = make([]byte, 4*hd)
				for i, f := range x {
					binary.LittleEndian.PutUint32(v[4*i:], math.Float32bits(f))
				}
			}
			want, sum, wantSum := append([]float32{}, a...), []float32{1}, float32(1)
			flashUpdateRef(c.typ, c.halfAcc, want, v, len(v), []float32{-vs}, &wantSum)
			FlashUpdate(c.typ, c.halfAcc, a, hd, v, len(v), 1, []float32{-vs}, 1, sum, make([]float32, hd))
			for i := range a {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(a[i]), "%s halfAcc=%v column %d", c.typ, c.halfAcc, i)
			}
			require.Equal(t, math.Float32bits(wantSum), math.Float32bits(sum[0]))
		}
	})
}

// TestFlashWidenF16 holds FlashWidenF16 to quant.FP16ToFP32Row on rows
// inside wider rows, and checks when it declines.
func TestFlashWidenF16(t *testing.T) {
	rng := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, hd := range []int{16, 64, 80, 128} {
			const n, stride = 37, 3*256 + 6
			v := quantized(t, rng, gguf.TypeF16, (n*stride+2)/2)
			dst := make([]float32, n*hd+1)
			dst[n*hd] = 42 // past the rows: untouched
			if !FlashWidenF16(v[2:], stride, n, hd, dst) {
				require.Nil(t, active.flashWiden, "a kernel declined hd %d", hd)
				continue
			}
			want := make([]float32, hd)
			for j := range n {
				quant.FP16ToFP32Row(v[2+j*stride:], want)
				require.Equal(t, want, dst[j*hd:(j+1)*hd], "hd %d row %d", hd, j)
			}
			require.Equal(t, float32(42), dst[n*hd])
		}
		require.False(t, FlashWidenF16(make([]byte, 64), 64, 1, 24, make([]float32, 24)), "24 values are not whole vectors")
	})
}

// BenchmarkFlashExp measures the cell weights of 1 024 arguments like a
// tile's (mostly small, both signs, no edges); ns/op over 1 024 values.
func BenchmarkFlashExp(b *testing.B) {
	rng := newRand(b)
	x, dst := make([]float32, 1024), make([]float32, 1024)
	for i := range x {
		x[i] = float32(rng.ExpFloat64() * 3)
		if rng.IntN(8) == 0 {
			x[i] = -x[i]
		}
	}
	benchVariants(b, func(b *testing.B) {
		for range b.N {
			FlashExp(x, dst)
		}
	})
}
