package quant

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
)

// Golden files made by llama.cpp's own quantization code (commit c392e5094;
// testdata/llamacpp/README.md says how). For each type TYPE,
// testdata/llamacpp holds
//
//	TYPE.q        quantize_TYPE of the weight rows (no importance matrix; for
//	              the read-only lattice types a synthetic one, see the harness)
//	TYPE.deq.sha  sha256 of dequantize_row_TYPE of TYPE.q (float32 LE)
//	TYPE.act      the activation rows quantized by the CPU backend's from_float
//	TYPE.dot      the CPU backend's vec_dot of each weight row and activation row
//
// for the inputs x.f32 and a.f32 that goldenInputs writes.

const (
	goldenRows = 16
	goldenCols = 512
)

var goldenTypes = []gguf.TensorType{gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeTQ1_0, gguf.TypeTQ2_0,
	gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS, gguf.TypeIQ3_S, gguf.TypeIQ1_S, gguf.TypeIQ1_M}

// goldenInputs returns deterministic weight and activation rows that stress
// the quantizers: Laplace values with outliers, per-block magnitudes over 8
// decades (binary16 scales from subnormal to large), blocks that are zero,
// below llama.cpp's GROUP_MAX_EPS, constant or with a single non-zero value,
// and a row that is zero throughout.
func goldenInputs() (x, a []float32) {
	r := rand.New(rand.NewPCG(14, 2025))
	gen := func() []float32 {
		v := make([]float32, goldenRows*goldenCols)
		for row := 0; row < goldenRows; row++ {
			for b := 0; b < goldenCols/32; b++ {
				blk := v[row*goldenCols+32*b : row*goldenCols+32*b+32]
				scale := math.Pow(10, r.Float64()*8-5)
				kind := r.IntN(16)
				if row == 3 {
					kind = -1
				}
				for j := range blk {
					l := r.ExpFloat64()
					if r.IntN(2) == 0 {
						l = -l
					}
					if r.IntN(50) == 0 {
						l *= 6
					}
					blk[j] = float32(l * scale)
				}
				switch kind {
				case -1, 0: // zero
					clear(blk)
				case 1: // below GROUP_MAX_EPS
					for j := range blk {
						blk[j] *= float32(1e-16 / scale)
					}
				case 2: // constant
					for j := range blk {
						blk[j] = float32(scale)
					}
				case 3: // one value
					c := blk[5]
					clear(blk)
					blk[r.IntN(32)] = c
				}
			}
		}
		return v
	}
	return gen(), gen()
}

func goldenDir(t testing.TB) string { return filepath.Join("testdata", "llamacpp") }

// TestWriteGoldenInputs writes x.f32 and a.f32 for the harness when
// WEFT_WRITE_GOLDEN_INPUTS names a directory.
func TestWriteGoldenInputs(t *testing.T) {
	dir := os.Getenv("WEFT_WRITE_GOLDEN_INPUTS")
	if dir == "" {
		t.Skip("WEFT_WRITE_GOLDEN_INPUTS not set")
	}
	x, a := goldenInputs()
	for name, v := range map[string][]float32{"x.f32": x, "a.f32": a} {
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
}

func readGolden(t *testing.T, typ gguf.TensorType, ext string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir(t), typ.String()+ext))
	require.NoError(t, err)
	return b
}

func floatBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// TestAgainstLlamaCpp checks Quantize byte for byte against llama.cpp's
// quantizer, Dequantize bit for bit against its dequantize_row_*, the
// activation quantizer byte for byte, and VecDot against llama.cpp's SIMD
// vec_dot, which sums in another order (so within a rounding bound).
func TestAgainstLlamaCpp(t *testing.T) {
	x, a := goldenInputs()
	for _, typ := range goldenTypes {
		t.Run(typ.String(), func(t *testing.T) {
			at := VecDotType(typ)
			wantQ := readGolden(t, typ, ".q")
			rb, _ := typ.RowBytes(goldenCols)
			got, err := QuantizeAlloc(typ, x)
			if Writable(typ) {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrReadOnly)
				got = wantQ
			}
			for row := 0; row < goldenRows; row++ {
				g, w := got[row*int(rb):(row+1)*int(rb)], wantQ[row*int(rb):(row+1)*int(rb)]
				if !bytes.Equal(g, w) {
					bb := int(typ.BlockBytes())
					for b := 0; b < len(g)/bb; b++ {
						if !bytes.Equal(g[b*bb:(b+1)*bb], w[b*bb:(b+1)*bb]) {
							t.Errorf("row %d block %d differs from llama.cpp:\n got %x\nwant %x", row, b, g[b*bb:(b+1)*bb], w[b*bb:(b+1)*bb])
						}
					}
				}
			}

			deq := make([]float32, len(x))
			require.NoError(t, Dequantize(typ, wantQ, deq))
			sum := sha256.Sum256(floatBytes(deq))
			assert.Equal(t, string(readGolden(t, typ, ".deq.sha")), fmt.Sprintf("%x\n", sum), "dequantized values differ from llama.cpp's")

			wantA := readGolden(t, typ, ".act")
			gotA, err := QuantizeAlloc(at, a)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(gotA, wantA), "%s activations differ from llama.cpp's", at)

			dots := readGolden(t, typ, ".dot")
			ab, _ := at.RowBytes(goldenCols)
			ad := make([]float32, goldenCols)
			wd := make([]float32, goldenCols)
			for row := 0; row < goldenRows; row++ {
				wr, ar := wantQ[row*int(rb):(row+1)*int(rb)], wantA[row*int(ab):(row+1)*int(ab)]
				want := math.Float32frombits(binary.LittleEndian.Uint32(dots[4*row:]))
				gotDot := VecDot(typ, goldenCols, wr, ar)
				require.NoError(t, Dequantize(typ, wr, wd))
				require.NoError(t, Dequantize(at, ar, ad))
				var abs float64
				for i := range wd {
					abs += (math.Abs(float64(wd[i])) + ternaryOffset(typ, wr, i)) * math.Abs(float64(ad[i]))
				}
				// Both sum at most goldenCols/32 block terms in float32.
				bound := 2 * float64(goldenCols/32+8) * math.Ldexp(abs, -24)
				assert.True(t, math.Abs(float64(gotDot-want)) <= bound, "row %d: VecDot %v, llama.cpp %v (bound %g)", row, gotDot, want, bound)
			}
		})
	}
}

// ternaryOffset is 2·|d| of element i's block for TQ1_0/TQ2_0, 0 otherwise.
// llama.cpp's AVX2 ternary kernels sum (t+1)·a per lane and subtract the
// activation sums per lane, so their lanes carry terms up to 2·|d·a| that
// cancel only in total: the rounding of its float lane sums is relative to
// those, not to the dequantized product.
func ternaryOffset(typ gguf.TensorType, row []byte, i int) float64 {
	off := map[gguf.TensorType]int{gguf.TypeTQ1_0: tq1D, gguf.TypeTQ2_0: tq2D}
	o, ok := off[typ]
	if !ok {
		return 0
	}
	b := i / qkK * int(typ.BlockBytes())
	return 2 * math.Abs(float64(f16(row, b+o)))
}
