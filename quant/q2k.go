package quant

// Q2_K block: 16 scale bytes (low nibble scale, high nibble min) | 64 bytes
// of 2-bit quants | d f16 | dmin f16.
const (
	q2kBytes   = 84
	q2kQs      = 16
	q2kD       = 80
	q2kDmin    = 82
	q2kGroup   = 16
	q2kGroups  = qkK / q2kGroup
	kScaleBits = 15 // 4-bit sub-block scales of Q2_K
)

func quantQ2K(src []float32, dst []byte) {
	var (
		L            [qkK]uint8
		aux          [q2kGroup]uint8
		w            [q2kGroup]float32
		scales, mins [q2kGroups]float32
		p            = qkx2Params{nmax: 3, rmin: -0.5, rdelta: 0.1, nstep: 15, useMAD: true}
	)
	for b := 0; b < len(src)/qkK; b++ {
		x, y := src[b*qkK:(b+1)*qkK], dst[b*q2kBytes:(b+1)*q2kBytes]
		var maxScale, maxMin float32
		for j := 0; j < q2kGroups; j++ {
			xs := x[j*q2kGroup : (j+1)*q2kGroup]
			for l, v := range xs {
				w[l] = abs32(v)
			}
			scales[j], mins[j] = makeQkx2Quants(p, xs, w[:], L[j*q2kGroup:(j+1)*q2kGroup], aux[:])
			maxScale, maxMin = max32(maxScale, scales[j]), max32(maxMin, mins[j])
		}
		q2kStoreScales(y, &scales, &mins, maxScale, maxMin)
		q2kRequantize(x, y, &L)
		packQ2(&L, y[q2kQs:q2kQs+64])
	}
}

// q2kStoreScales quantizes the sub-block scales and mins to 4 bits against
// their maxima and stores them with the two super-block factors.
func q2kStoreScales(y []byte, scales, mins *[q2kGroups]float32, maxScale, maxMin float32) {
	sc := y[:q2kGroups]
	clear(sc)
	putF16(y, q2kD, 0)
	putF16(y, q2kDmin, 0)
	if maxScale > 0 {
		iscale := kScaleBits / maxScale
		for j := range sc {
			sc[j] = uint8(nearestInt(iscale * scales[j]))
		}
		putF16(y, q2kD, maxScale/kScaleBits)
	}
	if maxMin > 0 {
		iscale := kScaleBits / maxMin
		for j := range sc {
			sc[j] |= uint8(nearestInt(iscale*mins[j]) << 4)
		}
		putF16(y, q2kDmin, maxMin/kScaleBits)
	}
}

// q2kRequantize recomputes the levels against the stored (rounded) scales.
func q2kRequantize(x []float32, y []byte, L *[qkK]uint8) {
	d, dmin := f16(y, q2kD), f16(y, q2kDmin)
	for j := 0; j < q2kGroups; j++ {
		sc := y[j]
		dj := d * float32(sc&0xf)
		if dj == 0 {
			continue
		}
		mj := float32(dmin * float32(sc>>4))
		for i := j * q2kGroup; i < (j+1)*q2kGroup; i++ {
			L[i] = uint8(clampInt(nearestInt((x[i]+mj)/dj), 0, 3))
		}
	}
}

// packQ2 stores 2-bit levels: within each 128-element half, byte l holds
// elements l, l+32, l+64, l+96 from the low bits up.
func packQ2(L *[qkK]uint8, qs []byte) {
	for j := 0; j < qkK; j += 128 {
		for l := 0; l < 32; l++ {
			qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

func dequantQ2K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x, y := src[b*q2kBytes:(b+1)*q2kBytes], dst[b*qkK:(b+1)*qkK]
		d, dmin := f16(x, q2kD), f16(x, q2kDmin)
		for i := range y {
			half, l := i/128, i%32
			shift := uint(i%128/32) * 2
			sc := x[i/q2kGroup]
			q := int32(x[q2kQs+half*32+l] >> shift & 3)
			dl, ml := d*float32(sc&0xf), float32(dmin*float32(sc>>4))
			y[i] = float32(dl*float32(q)) - ml
		}
	}
}
