package ref

import "math"

// These conversions match the x86 F16C instructions and ggml's bf16 helper.
// They are local so that the float paths of this package need nothing from
// package quant.

// halfToFloat widens an IEEE binary16 value exactly; normal numbers take
// the short path (rebias the exponent by 127-15 = 112), which inlines.
func halfToFloat(h uint16) float32 {
	if e := h & 0x7c00; e != 0 && e != 0x7c00 {
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)+112<<10)<<13)
	}
	return halfToFloatRare(h)
}

// halfToFloatRare widens zeros, subnormals, infinities and NaNs.
func halfToFloatRare(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		if mant != 0 {
			return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
		}
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0:
		v := float32(mant) * (1.0 / (1 << 24)) // subnormal or zero: exact
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// floatToHalf narrows to binary16 with round-to-nearest-even; overflow gives
// infinity and NaNs stay quiet NaNs.
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 112
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		return sign | roundShift(mant|0x800000, uint(14-e))
	}
	h := uint32(e)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: still correct
	}
	return sign | uint16(h)
}

// roundShift returns m>>shift rounded to nearest even.
func roundShift(m uint32, shift uint) uint16 {
	if shift > 24 {
		return 0
	}
	q := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return uint16(q)
}

// roundHalf returns f rounded to the nearest binary16 value.
func roundHalf(f float32) float32 { return halfToFloat(floatToHalf(f)) }

// bf16ToFloat widens a bfloat16 value.
func bf16ToFloat(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// floatToBF16 narrows like ggml_compute_fp32_to_bf16: round to nearest even,
// NaNs forced quiet.
func floatToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// roundBF16 returns f rounded to the nearest bfloat16 value.
func roundBF16(f float32) float32 { return bf16ToFloat(floatToBF16(f)) }
