package quant

import (
	"encoding/binary"
	"math"
)

// FP16ToFP32 widens an IEEE binary16 value exactly. NaNs keep their payload
// and come back quiet, as the x86 F16C instruction returns them.
func FP16ToFP32(h uint16) float32 {
	// Normal numbers (the common case) rebias the exponent by 127-15 = 112;
	// this short path inlines.
	if e := h & 0x7c00; e != 0 && e != 0x7c00 {
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)+112<<10)<<13)
	}
	return fp16Rare(h)
}

// fp16Rare widens zeros, subnormals, infinities and NaNs.
func fp16Rare(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f && mant != 0:
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// Subnormal: mant·2⁻²⁴ is exact in float32.
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// FP32ToFP16 narrows to binary16 rounding to nearest even, like F16C's
// vcvtps2ph with rounding mode 0: overflow gives infinity, tiny values become
// subnormals or zero, NaNs stay NaN (quiet, payload truncated).
func FP32ToFP16(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int32(bits>>23) & 0xff
	mant := bits & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		return sign | roundSubnormalHalf(mant|0x800000, uint32(14-e))
	}
	q := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && q&1 == 1) {
		q++ // a carry into the exponent is the correct result, up to infinity
	}
	return sign | uint16(q)
}

// roundSubnormalHalf shifts the 24-bit significand m right by shift bits,
// rounding to nearest even.
func roundSubnormalHalf(m, shift uint32) uint16 {
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

// BF16ToFP32 widens a bfloat16 value (the top half of a float32).
func BF16ToFP32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// FP32ToBF16 narrows to bfloat16 as ggml_compute_fp32_to_bf16 does: round to
// nearest even, NaNs forced quiet.
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// FP16ToFP32Row widens len(dst) little-endian binary16 values from src.
func FP16ToFP32Row(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = FP16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// FP32ToFP16Row narrows src into little-endian binary16 values in dst.
func FP32ToFP16Row(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], FP32ToFP16(v))
	}
}

// BF16ToFP32Row widens len(dst) little-endian bfloat16 values from src.
func BF16ToFP32Row(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = BF16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// FP32ToBF16Row narrows src into little-endian bfloat16 values in dst.
func FP32ToBF16Row(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], FP32ToBF16(v))
	}
}

// f16 reads a little-endian binary16 at b[off:] as float32.
func f16(b []byte, off int) float32 {
	return FP16ToFP32(binary.LittleEndian.Uint16(b[off:]))
}

// putF16 stores v rounded to binary16 at b[off:].
func putF16(b []byte, off int, v float32) {
	binary.LittleEndian.PutUint16(b[off:], FP32ToFP16(v))
}
