package quant

// Q3_K block: 32 bytes of high bits (hmask) | 64 bytes of low 2-bit quants |
// 12 bytes of 6-bit signed scales | d f16.
const (
	q3kBytes  = 110
	q3kQs     = 32
	q3kScales = 96
	q3kD      = 108
	q3kGroup  = 16
	q3kGroups = qkK / q3kGroup
)

// q3kScale decodes sub-block j's scale (-32..31) from the 12 packed bytes:
// the low nibbles sit in bytes 0..7, the top two bits in bytes 8..11.
func q3kScale(sc []byte, j int) int32 {
	lo := sc[j%8] & 0xf
	if j >= 8 {
		lo = sc[j-8] >> 4
	}
	hi := sc[8+j%4] >> (2 * (j / 4)) & 3
	return int32(lo|hi<<4) - 32
}

// q3kPutScale stores the biased 6-bit scale l (0..63) of sub-block j into
// zeroed scale bytes.
func q3kPutScale(sc []byte, j int, l uint8) {
	if j < 8 {
		sc[j] = l & 0xf
	} else {
		sc[j-8] |= (l & 0xf) << 4
	}
	sc[8+j%4] |= (l >> 4) << (2 * (j / 4))
}

func quantQ3K(src []float32, dst []byte) {
	var (
		L      [qkK]int8
		scales [q3kGroups]float32
	)
	for b := 0; b < len(src)/qkK; b++ {
		x, y := src[b*qkK:(b+1)*qkK], dst[b*q3kBytes:(b+1)*q3kBytes]
		var maxScale, amax float32
		for j := 0; j < q3kGroups; j++ {
			scales[j] = makeQ3Quants(4, x[j*q3kGroup:(j+1)*q3kGroup], L[j*q3kGroup:(j+1)*q3kGroup])
			if a := abs32(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}
		sc := y[q3kScales:q3kD]
		clear(sc)
		putF16(y, q3kD, 0)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := range scales {
				l := int32(int8(nearestInt(iscale * scales[j])))
				q3kPutScale(sc, j, uint8(clampInt(l, -32, 31)+32))
			}
			putF16(y, q3kD, 1/iscale)
		}
		q3kRequantize(x, y, &L)
		packQ3(&L, y)
	}
}

// q3kRequantize recomputes levels (biased to 0..7) against the stored scales.
func q3kRequantize(x []float32, y []byte, L *[qkK]int8) {
	d := f16(y, q3kD)
	for j := 0; j < q3kGroups; j++ {
		dj := d * float32(int8(q3kScale(y[q3kScales:q3kD], j)))
		if dj == 0 {
			continue
		}
		for i := j * q3kGroup; i < (j+1)*q3kGroup; i++ {
			L[i] = int8(clampInt(nearestInt(x[i]/dj), -4, 3) + 4)
		}
	}
}

// packQ3 splits 3-bit levels into the hmask bit (bit k of byte m holds
// element 32k+m) and 2-bit quants packed like Q2_K.
func packQ3(L *[qkK]int8, y []byte) {
	var low [qkK]uint8
	hmask := y[:q3kQs]
	clear(hmask)
	for j, l := range L {
		if l > 3 {
			hmask[j%32] |= 1 << (j / 32)
			l -= 4
		}
		low[j] = uint8(l)
	}
	packQ2(&low, y[q3kQs:q3kScales])
}

func dequantQ3K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x, y := src[b*q3kBytes:(b+1)*q3kBytes], dst[b*qkK:(b+1)*qkK]
		d := f16(x, q3kD)
		for i := range y {
			q := q3kLevel(x, i)
			dl := d * float32(q3kScale(x[q3kScales:q3kD], i/q3kGroup))
			y[i] = dl * float32(q)
		}
	}
}

// q3kLevel returns element i's signed level (-4..3).
func q3kLevel(x []byte, i int) int32 {
	shift := uint(i%128/32) * 2
	q := int32(x[q3kQs+i/128*32+i%32] >> shift & 3)
	if x[i%32]&(1<<(i/32)) == 0 {
		q -= 4
	}
	return q
}
