//go:build !purego

package simd

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
)

// The GEMM tiles are amd64's (gemmRows is theirs); other platforms run
// the pure-Go path, which TestBF16DotOrder covers.

// bf16Gemm is one set of BF16 GEMM tiles of the active variant, wrapped
// as Gemm wraps them; flush for the VDPBF16PS tiles (see bf16Step).
type bf16Gemm struct {
	name  string
	f     GemmFunc
	flush bool
}

// bf16Gemms lists the active variant's BF16 GEMMs: the FMA tiles, and the
// VDPBF16PS tiles where this CPU has AVX512_BF16 (Gemm's choice there),
// so that both are tested on such a CPU.
func bf16Gemms(t *testing.T) []bf16Gemm {
	var set *kernelSet
	for i := range asmKernels {
		if asmKernels[i].name == Variant() {
			set = &asmKernels[i]
		}
	}
	require.NotNil(t, set, "no kernel set %s", Variant())
	dot, rows := VecDot(gguf.TypeBF16), VecDotRows(gguf.TypeBF16)
	var out []bf16Gemm
	for _, k := range set.gemms {
		if k.w == gguf.TypeBF16 {
			out = append(out, bf16Gemm{"fma", wrapGemm(k, dot, rows), false})
		}
	}
	if k, ok := bf16DPKernel(set); ok {
		if hasBF16DP {
			out = append(out, bf16Gemm{"vdpbf16ps", wrapGemm(k, dot, rows), true})
		} else {
			t.Logf("this CPU lacks AVX512_BF16: VDPBF16PS tiles untested")
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestBF16GemmOrder holds every GEMM output to the tile model bit for bit:
// whole tiles of four rows take the tiles, the leftover rows the dot
// kernel, and lengths that are not whole chunks the row-by-row path. Both
// tile sets are held to it where the CPU runs both.
func TestBF16GemmOrder(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		if Variant() == pureGo {
			t.Skip("no tiles")
		}
		lanes := bf16TileLanes(t)
		for _, g := range bf16Gemms(t) {
			t.Run(g.name, func(t *testing.T) {
				for _, n := range []int{32, 64, 96, 2048, 5632, 48, 200} {
					for _, s := range append(gemmShapes, [2]int{20, 13}, [2]int{8, 6}, [2]int{7, 12}) {
						c := newGemmCase(t, r, gguf.TypeBF16, n, s[0], s[1])
						g.f(c.n, c.w, c.wStride, c.nRows, c.a, c.aStride, c.nTok, c.dst, c.dstStride)
						tiled := n%(2*lanes) == 0
						for i := range c.nRows {
							for j := range c.nTok {
								want := bf16DotModel(n, c.wRow(i), c.aRow(j))
								if tiled && i < c.nRows-c.nRows%gemmRows {
									want = bf16TileModel(lanes, n, c.wRow(i), c.aRow(j), g.flush)
								}
								got := c.dst[j*c.dstStride+i]
								require.Equal(t, math.Float32bits(want), math.Float32bits(got),
									"n=%d %d×%d row %d tok %d: got %g, want %g", n, s[0], s[1], i, j, got, want)
							}
						}
						c.check(t, false) // poison left in the gaps, within quant's bound
					}
				}
			})
		}
	})
}

// TestBF16MatchesRefMatMul holds the AVX-512 BF16 kernels to ref.MatMul,
// the model of llama.cpp's AVX512_BF16 build: batches (tinyBLAS's
// VDPBF16PS order where the length is whole 32-value chunks, else
// ggml_vec_dot_bf16) and one token (DecodeRows), bit for bit, on fresh
// random rows (normal values: ref does not model the flushing). Rows
// come in multiples of four, as llamafile's sgemm requires.
func TestBF16MatchesRefMatMul(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		if Variant() != "avx512vnni" {
			t.Skip("llama.cpp's AVX-512 orders are the AVX-512 variant's")
		}
		for _, g := range bf16Gemms(t) {
			t.Run(g.name, func(t *testing.T) {
				for _, n := range []int{32, 64, 160, 200, 2048, 4103} {
					for _, s := range [][2]int{{8, 1}, {12, 2}, {36, 7}, {32, 13}, {4, 6}} {
						nRows, nTok := s[0], s[1]
						w := make([]byte, 0, 2*n*nRows)
						for range nRows {
							w = append(w, quantized(t, r, gguf.TypeBF16, n)...)
						}
						x := randomFloats(r, n*nTok) // ref.MatMul and the kernels round it to bfloat16 alike
						a := make([]byte, 2*n*nTok)
						QuantizeRow(gguf.TypeBF16)(x, a)
						want := make([]float32, nRows*nTok)
						scratch := make([]float32, ref.ActScratchBytes(gguf.TypeBF16, n, nTok)/4)
						require.NoError(t, ref.MatMul(want, w, gguf.TypeBF16, nRows, n, x, nTok, f32Bytes(scratch)))
						got := make([]float32, nRows*nTok)
						if nTok == 1 {
							DecodeRows(gguf.TypeBF16)(n, w, 2*n, nRows, a, got)
						} else {
							g.f(n, w, 2*n, nRows, a, 2*n, nTok, got, nRows)
						}
						for i := range got {
							require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]),
								"n=%d %d×%d: token %d row %d: got %g, ref %g", n, nRows, nTok, i/nRows, i%nRows, got[i], want[i])
						}
					}
				}
			})
		}
	})
}

// tinyBF16 returns a bfloat16 near the bottom of the range: a denormal
// (a third of them), or a normal value whose products with another such
// land around 2⁻¹²⁶, where VDPBF16PS flushes and the FMAs do not.
func tinyBF16(r *rand.Rand) uint16 {
	h := uint16(r.Uint32()) & 0x807f // sign and mantissa
	if r.IntN(3) > 0 {
		h |= uint16(57+r.IntN(15)) << 7 // 2⁻⁷⁰ … 2⁻⁵⁶
	}
	return h
}

// TestBF16Denormals runs the tiles on rows of denormal and tiny values and
// holds each to its model bit for bit: the FMA tiles keep denormals, the
// VDPBF16PS tiles flush them; these are the only inputs on which the two
// differ. Gemm must be the VDPBF16PS tiles where the CPU has AVX512_BF16.
func TestBF16Denormals(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		if Variant() == pureGo {
			t.Skip("no tiles")
		}
		lanes := bf16TileLanes(t)
		gemms := bf16Gemms(t)
		for _, n := range []int{32, 96, 2048} {
			c := newGemmCase(t, r, gguf.TypeBF16, n, 12, 7)
			for _, row := range append(rowsOf(c.w, c.wStride, c.nRows), rowsOf(c.a, c.aStride, c.nTok)...) {
				for i := range n {
					binary.LittleEndian.PutUint16(row[2*i:], tinyBF16(r))
				}
			}
			outs := make([][]float32, len(gemms))
			for k, g := range gemms {
				dst := nanRow(len(c.dst))
				g.f(c.n, c.w, c.wStride, c.nRows, c.a, c.aStride, c.nTok, dst, c.dstStride)
				for i := range c.nRows {
					for j := range c.nTok {
						want := bf16TileModel(lanes, n, c.wRow(i), c.aRow(j), g.flush)
						got := dst[j*c.dstStride+i]
						require.Equal(t, math.Float32bits(want), math.Float32bits(got),
							"%s n=%d row %d tok %d: got %g, want %g", g.name, n, i, j, got, want)
					}
				}
				outs[k] = dst
			}
			c.run()
			require.Equal(t, f32Bits(outs[len(outs)-1]), f32Bits(c.dst), "Gemm is not the %s tiles", gemms[len(gemms)-1].name)
			if len(outs) == 2 {
				differ := 0
				for i := range outs[0] {
					if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
						differ++
					}
				}
				t.Logf("n=%d: %d of %d outputs differ between the FMA and VDPBF16PS tiles", n, differ, c.nRows*c.nTok)
				require.NotZero(t, differ, "denormal inputs should tell the two tile sets apart")
			}
		}
	})
}

// rowsOf returns the k rows of stride bytes at the start of b.
func rowsOf(b []byte, stride, k int) [][]byte {
	out := make([][]byte, k)
	for i := range out {
		out[i] = b[i*stride : (i+1)*stride]
	}
	return out
}

func f32Bits(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}

// TestBF16DPKernelsPresent guards against a table that loses the
// VDPBF16PS tiles, which the tests above would then skip.
func TestBF16DPKernelsPresent(t *testing.T) {
	for _, k := range asmKernels {
		if k.name == "avx512vnni" {
			require.Len(t, k.bf16DP, 6)
			_, ok := bf16DPKernel(&k)
			require.True(t, ok)
			return
		}
	}
	t.Fatal("no avx512vnni kernel set")
}
