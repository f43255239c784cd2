package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
)

// readOnlyTypes have no quantizer here; their tests use random blocks.
var readOnlyTypes = []gguf.TensorType{gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S,
	gguf.TypeIQ3_XXS, gguf.TypeIQ3_S, gguf.TypeIQ1_S, gguf.TypeIQ1_M}

// randomBlocks returns n values of type typ as random bytes (every bit
// pattern is a valid lattice block) with a finite, moderate scale.
func randomBlocks(r *rand.Rand, typ gguf.TensorType, n int) []byte {
	bb := int(typ.BlockBytes())
	b := make([]byte, n/qkK*bb)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for off := 0; off < len(b); off += bb {
		d := FP32ToFP16(float32(r.Float64()*0.1 + 1e-3))
		if typ == gguf.TypeIQ1_M {
			// d is spread over the top nibbles of the four scale words.
			for k := 0; k < 4; k++ {
				w := binary.LittleEndian.Uint16(b[off+iq1mScales+2*k:])
				w = w&0x0fff | (d>>(4*uint(k))&0xf)<<12
				binary.LittleEndian.PutUint16(b[off+iq1mScales+2*k:], w)
			}
			continue
		}
		binary.LittleEndian.PutUint16(b[off:], d)
	}
	return b
}

// TestVecDotReadOnly checks the lattice formats' dot products against the
// float64 dot of the dequantized rows, on random blocks that reach every
// grid entry, sign code and scale.
func TestVecDotReadOnly(t *testing.T) {
	r := newRand(t)
	for _, typ := range readOnlyTypes {
		for _, blocks := range []int{1, 3, 8} {
			n := blocks * qkK
			w := randomBlocks(r, typ, n)
			a, err := QuantizeAlloc(gguf.TypeQ8_K, randomWeights(r, n))
			require.NoError(t, err)
			require.NoError(t, CheckVecDot(typ, n, w, a))
			wd, ad := dequantAll(t, typ, w, n), dequantAll(t, gguf.TypeQ8_K, a, n)
			var exact, abs float64
			for i := range wd {
				exact += float64(wd[i]) * float64(ad[i])
				abs += math.Abs(float64(wd[i]) * float64(ad[i]))
			}
			got := float64(VecDot(typ, n, w, a))
			// One float term per block, plus the dequantization's own
			// roundings (IQ1's point + shift, the scale products).
			tol := abs * float64(blocks+8) * 0x1p-22
			assert.InDelta(t, exact, got, tol, "%s n=%d", typ, n)
		}
	}
}

// TestGridTables checks the copied lattice tables' shape: every value in
// the format's set, no point listed twice.
func TestGridTables(t *testing.T) {
	check := func(name string, points []uint64, width int, allowed func(v int8) bool) {
		seen := map[uint64]bool{}
		for i, p := range points {
			assert.False(t, seen[p], "%s[%d] repeats a point", name, i)
			seen[p] = true
			for j := 0; j < width; j++ {
				v := int8(p >> (8 * uint(j)))
				assert.True(t, allowed(v), "%s[%d] value %d is %d", name, i, j, v)
			}
		}
	}
	in := func(set ...int8) func(int8) bool {
		return func(v int8) bool {
			for _, s := range set {
				if v == s {
					return true
				}
			}
			return false
		}
	}
	widen := func(p []uint32) []uint64 {
		out := make([]uint64, len(p))
		for i, v := range p {
			out[i] = uint64(v)
		}
		return out
	}
	check("iq2xxsGrid", iq2xxsGrid[:], 8, in(8, 25, 43))
	check("iq2xsGrid", iq2xsGrid[:], 8, in(8, 25, 43))
	check("iq2sGrid", iq2sGrid[:], 8, in(8, 25, 43))
	check("iq3xxsGrid", widen(iq3xxsGrid[:]), 4, in(4, 12, 20, 28, 36, 44, 52, 62))
	check("iq3sGrid", widen(iq3sGrid[:]), 4, in(1, 3, 5, 7, 9, 11, 13, 15))
	check("iq1sGrid", iq1sGrid[:], 8, in(-1, 0, 1))
	// The sign codes: an even number of minus signs in every group of 8.
	for c := uint32(0); c < 128; c++ {
		s := ksigns(c)
		assert.Equal(t, uint8(c), s&127)
		n := 0
		for j := 0; j < 8; j++ {
			n += int(s >> uint(j) & 1)
		}
		assert.Zero(t, n%2, "code %d", c)
	}
}
