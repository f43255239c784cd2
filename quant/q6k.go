package quant

import (
	"encoding/binary"
	"math"
)

// Q6_K block: 128 bytes of low nibbles | 64 bytes of high 2-bit pairs | 16
// int8 scales | d f16.
const (
	q6kBytes  = 210
	q6kQh     = 128
	q6kScales = 192
	q6kD      = 208
	q6kGroup  = 16
	q6kGroups = qkK / q6kGroup
)

func quantQ6K(src []float32, dst []byte) {
	var (
		L      [qkK]int8
		scales [q6kGroups]float32
	)
	for b := 0; b < len(src)/qkK; b++ {
		x, y := src[b*qkK:(b+1)*qkK], dst[b*q6kBytes:(b+1)*q6kBytes]
		var maxScale, maxAbs float32
		for j := range scales {
			scales[j] = makeQxQuants(32, x[j*q6kGroup:(j+1)*q6kGroup], L[j*q6kGroup:(j+1)*q6kGroup])
			if a := abs32(scales[j]); a > maxAbs {
				maxAbs, maxScale = a, scales[j]
			}
		}
		if maxAbs < groupMaxEps {
			clear(y)
			continue
		}
		iscale := -128 / maxScale
		putF16(y, q6kD, 1/iscale)
		for j := range scales {
			y[q6kScales+j] = byte(int8(min(127, nearestInt(iscale*scales[j]))))
		}
		d := f16(y, q6kD)
		for j := range scales {
			dj := d * float32(int8(y[q6kScales+j]))
			if dj == 0 {
				continue
			}
			for i := j * q6kGroup; i < (j+1)*q6kGroup; i++ {
				L[i] = int8(clampInt(nearestInt(x[i]/dj), -32, 31) + 32)
			}
		}
		packQ6(&L, y)
	}
}

// packQ6 stores 6-bit levels. In each 128-element half, byte l of the low
// area holds elements l and l+64, byte l+32 holds l+32 and l+96; byte l of
// the high area holds the top two bits of l, l+32, l+64, l+96.
func packQ6(L *[qkK]int8, y []byte) {
	for h := 0; h < 2; h++ {
		ql, qh, lv := y[h*64:], y[q6kQh+h*32:], L[h*128:]
		for l := 0; l < 32; l++ {
			q1, q2, q3, q4 := uint8(lv[l]), uint8(lv[l+32]), uint8(lv[l+64]), uint8(lv[l+96])
			ql[l] = q1&0xf | (q3&0xf)<<4
			ql[l+32] = q2&0xf | (q4&0xf)<<4
			qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}

// q6kLevel returns element i's signed level (-32..31).
func q6kLevel(x []byte, i int) int32 {
	h, r := i/128, i%128
	quarter, l := uint(r/32), r%32
	lowByte := x[h*64+l+int(quarter%2)*32]
	low := lowByte >> (4 * (quarter / 2)) & 0xf
	high := x[q6kQh+h*32+l] >> (2 * quarter) & 3
	return int32(low|high<<4) - 32
}

func dequantQ6K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x, y := src[b*q6kBytes:(b+1)*q6kBytes], dst[b*qkK:(b+1)*qkK]
		d := f16(x, q6kD)
		for i := range y {
			sc := int8(x[q6kScales+i/q6kGroup])
			y[i] = d * float32(sc) * float32(q6kLevel(x, i))
		}
	}
}

// Q8_K block: d float32 | 256 int8 | 16 int16 sums of 16 quants each.
const (
	q8kBytes = 292
	q8kQs    = 4
	q8kSums  = 260
)

func quantQ8K(src []float32, dst []byte) {
	for b := 0; b < len(src)/qkK; b++ {
		x, y := src[b*qkK:(b+1)*qkK], dst[b*q8kBytes:(b+1)*q8kBytes]
		maxv, amax := signedAbsMax(x)
		if amax == 0 {
			clear(y) // ggml leaves the sums untouched; zero is their true value
			continue
		}
		iscale := -127 / maxv
		qs := y[q8kQs:q8kSums]
		for j, v := range x {
			qs[j] = byte(int8(min(127, nearestInt(iscale*v))))
		}
		for j := 0; j < qkK/16; j++ {
			var sum int32
			for _, q := range qs[16*j : 16*j+16] {
				sum += int32(int8(q))
			}
			binary.LittleEndian.PutUint16(y[q8kSums+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(y, math.Float32bits(1/iscale))
	}
}

func dequantQ8K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x, y := src[b*q8kBytes:(b+1)*q8kBytes], dst[b*qkK:(b+1)*qkK]
		d := math.Float32frombits(binary.LittleEndian.Uint32(x))
		for j, q := range x[q8kQs:q8kSums] {
			y[j] = d * float32(int8(q))
		}
	}
}
