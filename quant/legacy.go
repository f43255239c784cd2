package quant

import (
	"encoding/binary"
	"math"
)

// Byte layouts of the 32-element legacy blocks (offsets within one block).
const (
	qk = 32 // elements per legacy block

	q4_0Bytes = 18 // d f16 | 16 nibble bytes
	q4_1Bytes = 20 // d f16 | m f16 | 16 nibble bytes
	q5_0Bytes = 22 // d f16 | qh u32 | 16 nibble bytes
	q5_1Bytes = 24 // d f16 | m f16 | qh u32 | 16 nibble bytes
	q8_0Bytes = 34 // d f16 | 32 int8
	q8_1Bytes = 36 // d f16 | s f16 (d·Σq) | 32 int8
)

// signedAbsMax returns the first element of largest magnitude and that
// magnitude; NaNs never win, as with C's `if (amax < fabsf(v))`.
func signedAbsMax(x []float32) (maxv, amax float32) {
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax, maxv = a, v
		}
	}
	return maxv, amax
}

// cMaxAbs folds |x| with C's MAX(a, b) = a > b ? a : b, NaNs included.
func cMaxAbs(x []float32) float32 {
	var amax float32
	for _, v := range x {
		if a := abs32(v); !(amax > a) {
			amax = a
		}
	}
	return amax
}

// minMax returns the smallest and largest element, starting from ±FLT_MAX.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// inv is C's `d ? 1.0f/d : 0.0f`.
func inv(d float32) float32 {
	if d != 0 {
		return 1 / d
	}
	return 0
}

// truncInt8 converts like C's (int8_t) cast of a float on x86: truncate to
// int32, keep the low byte.
func truncInt8(f float32) int32 { return int32(int8(int32(f))) }

// roundInt8 is C's `int8_t q = roundf(f)`: half away from zero.
func roundInt8(f float32) int8 { return int8(int32(float32(math.Round(float64(f))))) }

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func quantF32(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func quantQ4_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/qk; b++ {
		x, y := src[b*qk:(b+1)*qk], dst[b*q4_0Bytes:(b+1)*q4_0Bytes]
		maxv, _ := signedAbsMax(x)
		d := maxv / -8
		id := inv(d)
		putF16(y, 0, d)
		for j := 0; j < qk/2; j++ {
			lo := min(15, truncInt8(float32(x[j]*id)+8.5))
			hi := min(15, truncInt8(float32(x[j+qk/2]*id)+8.5))
			y[2+j] = uint8(lo) | uint8(hi)<<4
		}
	}
}

func dequantQ4_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk; b++ {
		x, y := src[b*q4_0Bytes:(b+1)*q4_0Bytes], dst[b*qk:(b+1)*qk]
		d := f16(x, 0)
		for j, q := range x[2:] {
			y[j] = float32(int32(q&0xf)-8) * d
			y[j+qk/2] = float32(int32(q>>4)-8) * d
		}
	}
}

func quantQ4_1(src []float32, dst []byte) {
	for b := 0; b < len(src)/qk; b++ {
		x, y := src[b*qk:(b+1)*qk], dst[b*q4_1Bytes:(b+1)*q4_1Bytes]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		id := inv(d)
		putF16(y, 0, d)
		putF16(y, 2, lo)
		for j := 0; j < qk/2; j++ {
			q0 := min(15, truncInt8(float32((x[j]-lo)*id)+0.5))
			q1 := min(15, truncInt8(float32((x[j+qk/2]-lo)*id)+0.5))
			y[4+j] = uint8(q0) | uint8(q1)<<4
		}
	}
}

func dequantQ4_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk; b++ {
		x, y := src[b*q4_1Bytes:(b+1)*q4_1Bytes], dst[b*qk:(b+1)*qk]
		d, m := f16(x, 0), f16(x, 2)
		for j, q := range x[4:] {
			y[j] = float32(float32(q&0xf)*d) + m
			y[j+qk/2] = float32(float32(q>>4)*d) + m
		}
	}
}

// packQ5 stores 32 five-bit values: low nibbles at qs (element j and j+16
// share a byte), fifth bits as a little-endian uint32 at qh.
func packQ5(q *[qk]uint8, qh, qs []byte) {
	var hbits uint32
	for j := 0; j < qk/2; j++ {
		q0, q1 := q[j], q[j+qk/2]
		qs[j] = q0&0xf | (q1&0xf)<<4
		hbits |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+qk/2)
	}
	binary.LittleEndian.PutUint32(qh, hbits)
}

// unpackQ5 is the inverse of packQ5.
func unpackQ5(qh, qs []byte, q *[qk]int32) {
	hbits := binary.LittleEndian.Uint32(qh)
	for j := 0; j < qk/2; j++ {
		q[j] = int32(qs[j]&0xf) | int32(hbits>>j&1)<<4
		q[j+qk/2] = int32(qs[j]>>4) | int32(hbits>>(j+qk/2)&1)<<4
	}
}

func quantQ5_0(src []float32, dst []byte) {
	var q [qk]uint8
	for b := 0; b < len(src)/qk; b++ {
		x, y := src[b*qk:(b+1)*qk], dst[b*q5_0Bytes:(b+1)*q5_0Bytes]
		maxv, _ := signedAbsMax(x)
		d := maxv / -16
		id := inv(d)
		putF16(y, 0, d)
		for j, v := range x {
			q[j] = uint8(min(31, truncInt8(float32(v*id)+16.5)))
		}
		packQ5(&q, y[2:6], y[6:])
	}
}

func dequantQ5_0(src []byte, dst []float32) {
	var q [qk]int32
	for b := 0; b < len(dst)/qk; b++ {
		x, y := src[b*q5_0Bytes:(b+1)*q5_0Bytes], dst[b*qk:(b+1)*qk]
		d := f16(x, 0)
		unpackQ5(x[2:6], x[6:], &q)
		for j, v := range q {
			y[j] = float32(v-16) * d
		}
	}
}

func quantQ5_1(src []float32, dst []byte) {
	var q [qk]uint8
	for b := 0; b < len(src)/qk; b++ {
		x, y := src[b*qk:(b+1)*qk], dst[b*q5_1Bytes:(b+1)*q5_1Bytes]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		id := inv(d)
		putF16(y, 0, d)
		putF16(y, 2, lo)
		for j, v := range x {
			q[j] = uint8(int32(float32((v-lo)*id) + 0.5))
		}
		packQ5(&q, y[4:8], y[8:])
	}
}

func dequantQ5_1(src []byte, dst []float32) {
	var q [qk]int32
	for b := 0; b < len(dst)/qk; b++ {
		x, y := src[b*q5_1Bytes:(b+1)*q5_1Bytes], dst[b*qk:(b+1)*qk]
		d, m := f16(x, 0), f16(x, 2)
		unpackQ5(x[4:8], x[8:], &q)
		for j, v := range q {
			y[j] = float32(float32(v)*d) + m
		}
	}
}

// quantQ8Block fills qs with round(x/d) and returns d = amax/127 (unrounded).
func quantQ8Block(x []float32, qs []byte) float32 {
	d := cMaxAbs(x) / 127
	id := inv(d)
	for j, v := range x {
		qs[j] = byte(roundInt8(v * id))
	}
	return d
}

func quantQ8_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/qk; b++ {
		y := dst[b*q8_0Bytes : (b+1)*q8_0Bytes]
		putF16(y, 0, quantQ8Block(src[b*qk:(b+1)*qk], y[2:]))
	}
}

func dequantQ8_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk; b++ {
		x, y := src[b*q8_0Bytes:(b+1)*q8_0Bytes], dst[b*qk:(b+1)*qk]
		d := f16(x, 0)
		for j, q := range x[2:] {
			y[j] = float32(int8(q)) * d
		}
	}
}

func quantQ8_1(src []float32, dst []byte) {
	for b := 0; b < len(src)/qk; b++ {
		y := dst[b*q8_1Bytes : (b+1)*q8_1Bytes]
		d := quantQ8Block(src[b*qk:(b+1)*qk], y[4:])
		var sum int32
		for _, q := range y[4:] {
			sum += int32(int8(q))
		}
		putF16(y, 0, d)
		putF16(y, 2, float32(sum)*d)
	}
}

// dequantQ8_1 has no ggml counterpart (ggml never dequantizes Q8_1); it
// returns q·d, ignoring the stored sum.
func dequantQ8_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk; b++ {
		x, y := src[b*q8_1Bytes:(b+1)*q8_1Bytes], dst[b*qk:(b+1)*qk]
		d := f16(x, 0)
		for j, q := range x[4:] {
			y[j] = float32(int8(q)) * d
		}
	}
}
