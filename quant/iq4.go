package quant

import "encoding/binary"

// The 4-bit non-linear formats. Each element is a 4-bit index into a table
// of 16 signed levels spaced more tightly near zero than at the ends, so
// the weights' bell-shaped distribution costs less error than with Q4_0's
// evenly spaced levels.
//
//	IQ4_NL: 32 elements: d f16 | 16 bytes of index pairs (j, j+16) — Q4_0's layout
//	IQ4_XS: 256 elements: d f16 | scales_h u16 | scales_l [4]u8 | 128 bytes of
//	        index pairs, one 16-byte run per 32-element sub-block; sub-block ib
//	        has the 6-bit scale ls = low nibble ib of scales_l | bits 2ib..2ib+1
//	        of scales_h << 4, and its elements are d·(ls−32)·level.
const (
	iq4nlBytes  = 18
	iq4xsBytes  = 136
	iq4xsScaleH = 2
	iq4xsScaleL = 4
	iq4xsQs     = 8
	iq4xsSubs   = qkK / 32
)

// iq4Levels is the level table kvalues_iq4nl of llama.cpp's
// ggml/src/ggml-quants.c (commit c392e5094), shared by IQ4_NL and IQ4_XS.
var iq4Levels = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// IQ4Levels returns the IQ4_NL/IQ4_XS level table, for kernels that look
// levels up themselves.
func IQ4Levels() [16]int8 { return iq4Levels }

// iq4Level returns the level of element j (0..31) of a 32-element run of
// index pairs qs.
func iq4Level(qs []byte, j int) int32 {
	return int32(iq4Levels[qs[j%16]>>(4*uint(j/16))&0xf])
}

// iq4xsScale returns the 6-bit scale of sub-block ib (0..7), without the
// −32 offset.
func iq4xsScale(x []byte, ib int) int32 {
	lo := x[iq4xsScaleL+ib/2] >> (4 * uint(ib%2)) & 0xf
	hi := binary.LittleEndian.Uint16(x[iq4xsScaleH:]) >> (2 * uint(ib)) & 3
	return int32(lo) | int32(hi)<<4
}

func dequantIQ4NL(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk; b++ {
		x, y := src[b*iq4nlBytes:(b+1)*iq4nlBytes], dst[b*qk:(b+1)*qk]
		d := f16(x, 0)
		for j := range y {
			y[j] = d * float32(iq4Level(x[2:], j))
		}
	}
}

func dequantIQ4XS(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x, y := src[b*iq4xsBytes:(b+1)*iq4xsBytes], dst[b*qkK:(b+1)*qkK]
		d := f16(x, 0)
		for ib := 0; ib < iq4xsSubs; ib++ {
			dl := d * float32(iq4xsScale(x, ib)-32)
			qs := x[iq4xsQs+16*ib:]
			for j := 0; j < 32; j++ {
				y[32*ib+j] = dl * float32(iq4Level(qs, j))
			}
		}
	}
}

// iq4Tries is the scale search width llama-quantize uses for both formats
// (quantize_iq4_nl / quantize_iq4_xs pass ntry = 7).
const iq4Tries = 7

// nearestLevel returns the index of the table level closest to v; a tie
// goes to the upper level, and values beyond either end take that end, as
// llama.cpp's best_index_int8 (a bisection) decides.
func nearestLevel(v float32) uint8 {
	if v <= float32(iq4Levels[0]) {
		return 0
	}
	if v >= float32(iq4Levels[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if v < float32(iq4Levels[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if float32(v-float32(iq4Levels[hi-1])) < float32(float32(iq4Levels[hi])-v) {
		return uint8(hi - 1)
	}
	return uint8(hi)
}

// iq4Fit returns Σw·q·x and Σw·q² for the levels q that id·x picks, with
// weights w = x² (no importance matrix). When L is not nil it receives the
// picked indices.
func iq4Fit(x []float32, id float32, L []uint8) (sumqx, sumq2 float32) {
	for j, v := range x {
		l := nearestLevel(float32(id * v))
		if L != nil {
			L[j] = l
		}
		q := float32(iq4Levels[l])
		w := float32(v * v)
		sumqx += float32(float32(w*q) * v)
		sumq2 += float32(float32(w*q) * q)
	}
	return sumqx, sumq2
}

// iq4BlockScale searches the scale of one 32-element block as llama.cpp's
// quantize_row_iq4_nl_impl does: start from the largest-magnitude element
// mapped to the table's end, refit by least squares, then try 2·ntry+1
// other mappings of that element and keep the best weighted fit.
func iq4BlockScale(x []float32) float32 {
	maxv, amax := signedAbsMax(x)
	if amax < groupMaxEps {
		return 0
	}
	d := -maxv / float32(iq4Levels[0])
	sumqx, sumq2 := iq4Fit(x, 1/d, nil)
	d = sumqx / sumq2
	best := d * sumqx
	for itry := -iq4Tries; itry <= iq4Tries; itry++ {
		id := float32(itry+int(iq4Levels[0])) / maxv
		sumqx, sumq2 = iq4Fit(x, id, nil)
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			d = sumqx / sumq2
			best = d * sumqx
		}
	}
	return d
}

// quantIQ4NL is llama-quantize's IQ4_NL quantizer without an importance
// matrix (quantize_iq4_nl; not quantize_row_iq4_nl_ref, which skips the
// search and is only used for activations, which IQ4_NL never is).
func quantIQ4NL(src []float32, dst []byte) {
	var L [qk]uint8
	for b := 0; b < len(src)/qk; b++ {
		x, y := src[b*qk:(b+1)*qk], dst[b*iq4nlBytes:(b+1)*iq4nlBytes]
		d := iq4BlockScale(x)
		putF16(y, 0, d)
		id := inv(d)
		for j, v := range x {
			L[j] = nearestLevel(float32(id * v))
		}
		packIQ4(L[:], y[2:])
	}
}

// quantIQ4XS is llama-quantize's IQ4_XS quantizer without an importance
// matrix (quantize_iq4_xs): a scale per 32-element sub-block as for IQ4_NL,
// then those scales quantized to 6 bits against the super-block scale d and
// every element re-picked with its sub-block's rounded scale.
func quantIQ4XS(src []float32, dst []byte) {
	var (
		L      [32]uint8
		scales [iq4xsSubs]float32
	)
	for b := 0; b < len(src)/qkK; b++ {
		x, y := src[b*qkK:(b+1)*qkK], dst[b*iq4xsBytes:(b+1)*iq4xsBytes]
		var maxScale, amaxScale float32
		for ib := range scales {
			scales[ib] = iq4BlockScale(x[32*ib : 32*ib+32])
			if a := abs32(scales[ib]); a > amaxScale {
				amaxScale, maxScale = a, scales[ib]
			}
		}
		d := -maxScale / 32
		putF16(y, 0, d)
		id := inv(d)
		var scalesH uint16
		clear(y[iq4xsScaleL:iq4xsQs])
		for ib := range scales {
			l := clampInt(nearestInt(float32(id*scales[ib])), -32, 31)
			idl := inv(d * float32(l))
			xb := x[32*ib : 32*ib+32]
			for j, v := range xb {
				L[j] = nearestLevel(float32(idl * v))
			}
			packIQ4(L[:], y[iq4xsQs+16*ib:])
			l += 32
			y[iq4xsScaleL+ib/2] |= byte(l&0xf) << (4 * uint(ib%2))
			scalesH |= uint16(l>>4) << (2 * uint(ib))
		}
		binary.LittleEndian.PutUint16(y[iq4xsScaleH:], scalesH)
	}
}

// packIQ4 stores 32 indices as 16 bytes: element j in the low nibble of
// byte j, element j+16 in its high nibble.
func packIQ4(L []uint8, q []byte) {
	for j := 0; j < 16; j++ {
		q[j] = L[j] | L[j+16]<<4
	}
}

// dotIQ4NL: an integer sum per block, then (d_a·d_w)·sum added in float32,
// the per-block value of every ggml_vec_dot_iq4_nl_q8_0 variant.
func dotIQ4NL(n int, w, a []byte) float32 {
	var sum float32
	for b := 0; b < n/qk; b++ {
		x, y := w[b*iq4nlBytes:(b+1)*iq4nlBytes], a[b*q8_0Bytes:(b+1)*q8_0Bytes]
		var isum int32
		for j := 0; j < qk; j++ {
			isum += iq4Level(x[2:], j) * int32(int8(y[2+j]))
		}
		sum += float32(float32(f16(y, 0)*f16(x, 0)) * float32(isum))
	}
	return sum
}

// dotIQ4XS follows ggml_vec_dot_iq4_xs_q8_K's x86 (AVX2, also used by the
// AVX-512 builds llama.cpp's references come from) arithmetic rather than
// the generic kernel's: the sub-block sums times their 6-bit scales are
// added as integers over the whole super-block, then multiplied once by
// d_w·d_a. The generic kernel instead adds a float term per 32 elements;
// the two differ only in rounding.
func dotIQ4XS(n int, w, a []byte) float32 {
	var sum float32
	for b := 0; b < n/qkK; b++ {
		x, y := w[b*iq4xsBytes:(b+1)*iq4xsBytes], a[b*q8kBytes:(b+1)*q8kBytes]
		yd, q8 := q8kView(y)
		var isum int32
		for ib := 0; ib < iq4xsSubs; ib++ {
			qs := x[iq4xsQs+16*ib:]
			var s int32
			for j := 0; j < 32; j++ {
				s += iq4Level(qs, j) * int32(int8(q8[32*ib+j]))
			}
			isum += (iq4xsScale(x, ib) - 32) * s
		}
		sum += float32(float32(f16(x, 0)*yd) * float32(isum))
	}
	return sum
}
