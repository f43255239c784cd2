package simd

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// specialBlocks are 32-value blocks that stress rounding and the fallback:
// exact halves (max 127 gives d = 1, so x/d = x), zeros, subnormals whose
// inverse scale overflows, values near the float32 limit, ±Inf and NaN.
func specialBlocks(r *rand.Rand) [][]float32 {
	block := func(f func(i int) float32) []float32 {
		b := make([]float32, 32)
		for i := range b {
			b[i] = f(i)
		}
		return b
	}
	return [][]float32{
		block(func(i int) float32 {
			if i == 0 {
				return 127
			}
			return float32(r.IntN(253)-126) + 0.5
		}),
		block(func(i int) float32 { return 0 }),
		block(func(i int) float32 { return float32(r.NormFloat64()) * 1e-40 }),
		block(func(i int) float32 { return float32(r.NormFloat64()) * 1e38 }),
		block(func(i int) float32 { return float32(i-16) / 3 }),
		block(func(i int) float32 {
			if i == 5 {
				return float32(math.Inf(-1))
			}
			return float32(r.NormFloat64())
		}),
		block(func(i int) float32 {
			if i == 9 {
				return float32(math.NaN())
			}
			return float32(r.NormFloat64())
		}),
	}
}

func checkQuantize(t *testing.T, typ gguf.TensorType, src []float32, what string) {
	size, err := typ.RowBytes(uint64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	quant.QuantizeRow(typ, src, want)
	got := make([]byte, size+1)
	for i := range got {
		got[i] = 0xa5 // poison
	}
	QuantizeRow(typ)(src, got[:size])
	if !bytes.Equal(got[:size], want) {
		i := 0
		for got[i] == want[i] {
			i++
		}
		t.Errorf("%s %s (%d values): first difference at byte %d: got %#x, want %#x", typ, what, len(src), i, got[i], want[i])
	}
	if got[size] != 0xa5 {
		t.Errorf("%s %s: wrote past the end", typ, what)
	}
}

func TestQuantizeRowRandom(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ8_K} {
			bs := int(typ.BlockSize())
			for _, nb := range []int{1, 2, 3, 7, 33, 128} {
				checkQuantize(t, typ, randomFloats(r, nb*bs), "random")
			}
		}
		// F16 rows: whole chunks of 8, a ragged tail (the reference path),
		// and values that round to subnormals, overflow to infinity or are NaN.
		for _, n := range []int{8, 16, 24, 2048, 5632, 13} {
			checkQuantize(t, gguf.TypeF16, randomFloats(r, n), "random f16")
		}
		special := []float32{65504, 65520, -65536, 1e-8, -6e-8, 3e-5, float32(math.Inf(1)), float32(math.NaN())}
		checkQuantize(t, gguf.TypeF16, special, "special f16")
	})
}

func TestQuantizeRowSpecial(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, b := range specialBlocks(r) {
			checkQuantize(t, gguf.TypeQ8_0, b, "special block")
			// The same block after a normal one, to see the fallback after a prefix.
			row := append(randomFloats(r, 64), b...)
			checkQuantize(t, gguf.TypeQ8_0, row, "row ending in a special block")
		}
	})
}

// specialSuperBlocks are 256-value Q8_K blocks: a magnitude tie between
// signs (the first wins), exact halves (max −127 gives iscale 1, and halves
// round to even), zeros and a NaN (both left to the reference).
func specialSuperBlocks(r *rand.Rand) [][]float32 {
	tie := randomFloats(r, 256)
	for i := range tie {
		tie[i] = max(-4, min(4, tie[i]))
	}
	tie[3], tie[6], tie[100] = -5, 5, 5
	halves := make([]float32, 256)
	for i := range halves {
		halves[i] = float32(r.IntN(253)-126) + 0.5
	}
	halves[200] = -127
	nan := randomFloats(r, 256)
	nan[77] = float32(math.NaN())
	return [][]float32{tie, halves, make([]float32, 256), nan}
}

func TestQuantizeRowQ8KSpecial(t *testing.T) {
	r := newRand(t)
	forEachVariant(t, func(t *testing.T) {
		for _, b := range specialSuperBlocks(r) {
			checkQuantize(t, gguf.TypeQ8_K, b, "special block")
			checkQuantize(t, gguf.TypeQ8_K, append(randomFloats(r, 256), b...), "row ending in a special block")
		}
	})
}

// TestRoundHalfAway quantizes every half k+½ below 127 and its float32
// neighbours, both signs, in blocks whose scale is exactly 1 (max 127).
func TestRoundHalfAway(t *testing.T) {
	var src []float32
	for k := 0; k < 127; k++ {
		h := float32(k) + 0.5
		for _, v := range []float32{math.Nextafter32(h, 0), h, math.Nextafter32(h, 200)} {
			if len(src)%32 == 0 {
				src = append(src, 127)
			}
			src = append(src, v, -v)
		}
	}
	for len(src)%32 != 0 {
		src = append(src, 0.5)
	}
	forEachVariant(t, func(t *testing.T) {
		checkQuantize(t, gguf.TypeQ8_0, src, "halves")
	})
}
