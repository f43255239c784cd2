package simd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// TestPackedGetRows: rows of a repacked table (a row count that is not a
// multiple of 16, so the last group is padded) widen to ref.GetRows's bits
// on the GGUF bytes; out-of-range ids and other types are errors.
func TestPackedGetRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0} {
		const rows, cols = 37, 96
		vals := make([]float32, rows*cols)
		for i := range vals {
			vals[i] = float32(r.NormFloat64())
		}
		raw, err := quant.QuantizeAlloc(typ, vals)
		require.NoError(t, err)
		packed, err := Repack(typ, rows, cols, raw)
		require.NoError(t, err)
		ids := []int32{0, 15, 16, 36, 3, 36, 31}
		want := make([]float32, len(ids)*cols)
		require.NoError(t, ref.GetRows(want, raw, typ, cols, ids))
		got := make([]float32, len(want))
		for i := range got {
			got[i] = float32(math.NaN())
		}
		require.NoError(t, PackedGetRows(typ, packed, rows, cols, ids, got))
		for i := range want {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s: value %d", typ, i)
		}
		assert.ErrorContains(t, PackedGetRows(typ, packed, rows, cols, []int32{37}, got), "row 37 out of range")
		assert.ErrorContains(t, PackedGetRows(typ, packed[:len(packed)-1], rows, cols, ids, got), "packed bytes")
	}
	assert.ErrorContains(t, PackedGetRows(gguf.TypeQ4_K, nil, 16, 256, nil, nil), "no packed lookup for Q4_K")
}
