package ref

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShiftKVMovesKeysToTheirNewPositions checks that ShiftKV is a
// context shift: after it, row q holds what storing the key rotated for
// position q directly would hold (within float32 rounding of the angles;
// binary16 rounding for an F16 cache), V rows moved unchanged, the kept
// rows untouched. For YaRN this holds only because the shift rotates
// with magnitude 1 (llama.cpp scales again, see ShiftCosSin).
func TestShiftKVMovesKeysToTheirNewPositions(t *testing.T) {
	rng := newRNG(t)
	ropes := []RoPE{
		{Dims: 8, Base: 10000, FreqScale: 1},
		{Dims: 16, Base: 10000, FreqScale: 1, NeoX: true},
		{Dims: 8, Base: 10000, FreqScale: 0.5}, // partial: head of 12
		{Dims: 8, Base: 500000, FreqScale: 1, Factors: []float32{1, 2.5, 4, 8}},
		{Dims: 16, Base: 10000, FreqScale: 0.25, NeoX: true, ExtFactor: 1, AttnFactor: 1.25, CorrDims: [2]float32{2, 6}},
	}
	const heads, ctx, keep, n = 2, 40, 3, 37
	for i, r := range ropes {
		hd := r.Dims
		if i == 2 {
			hd = 12
		}
		for _, f16 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d,f16=%v", i, f16), func(t *testing.T) {
				w := heads * hd
				raw := make([][]float32, n) // unrotated keys by original position
				newKV := func() KV {
					if f16 {
						return KV{F16: make([]uint16, ctx*w), RowLen: w}
					}
					return KV{F32: make([]float32, ctx*w), RowLen: w}
				}
				k, v := newKV(), newKV()
				vals := make([][]float32, n)
				for p := range n {
					raw[p] = randVec(rng, w, 2)
					rot := append([]float32(nil), raw[p]...)
					r.Apply(rot, heads, hd, int32(p))
					k.Store(p, rot)
					vals[p] = randVec(rng, w, 1)
					v.Store(p, vals[p])
				}
				before := newKV()
				copy(before.F16, k.F16)
				copy(before.F32, k.F32)
				discard := (n - keep) / 2
				ShiftKV(k, v, keep, discard, n, r, heads, hd)
				got, want := make([]float32, w), make([]float32, w)
				for q := range n - discard {
					src := q
					if q >= keep {
						src = q + discard
					}
					k.load(q, got)
					copy(want, raw[src])
					r.Apply(want, heads, hd, int32(q))
					rowMax := 0.0
					for _, x := range raw[src] {
						rowMax = math.Max(rowMax, math.Abs(float64(x)))
					}
					for e := range w {
						// An f16 key was rounded twice. The first rounding (when it
						// was stored) errs by up to a half-step of each element of
						// its rotation pair, and the shift's rotation carries that
						// error vector over with its length, up to √2·rowMax·2⁻¹¹,
						// however small the element it lands in; the second rounding
						// adds a half-step of the result. Both beside the angles'
						// float32 error at positions up to n.
						tol := 2e-5 * (1 + math.Abs(float64(want[e])))
						if f16 {
							tol += 0x1p-11 * (1.5*rowMax + math.Abs(float64(want[e])))
						}
						require.InDelta(t, want[e], got[e], tol, "row %d (was %d), element %d", q, src, e)
					}
					if q < keep {
						for e := range w {
							if f16 {
								require.Equal(t, before.F16[q*w+e], k.F16[q*w+e], "kept row %d changed", q)
							} else {
								require.Equal(t, before.F32[q*w+e], k.F32[q*w+e], "kept row %d changed", q)
							}
						}
					}
					v.load(q, got)
					v2 := append([]float32(nil), vals[src]...)
					if f16 {
						for e := range v2 {
							v2[e] = halfToFloat(floatToHalf(v2[e]))
						}
					}
					require.Equal(t, v2, got, "V row %d (was %d)", q, src)
				}
			})
		}
	}
}
