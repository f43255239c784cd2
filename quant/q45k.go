package quant

// Q4_K block: d f16 | dmin f16 | 12 bytes of 6-bit scales and mins | 128
// bytes of 4-bit quants. Q5_K adds 32 bytes of fifth bits before the quants.
const (
	q4kBytes  = 144
	q5kBytes  = 176
	kD        = 0
	kDmin     = 2
	kScales   = 4
	kQh       = 16 // Q5_K high bits
	q4kQs     = 16
	q5kQs     = 48
	q45Group  = 32
	q45Groups = qkK / q45Group
)

// scaleMinK4 unpacks sub-block j's 6-bit scale and min (get_scale_min_k4).
func scaleMinK4(q []byte, j int) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// putScaleMinK4 packs sub-block j's scale and min; bytes for j < 4 must be
// written before those for j ≥ 4.
func putScaleMinK4(q []byte, j int, ls, lm uint8) {
	if j < 4 {
		q[j], q[j+4] = ls, lm
		return
	}
	q[j+4] = ls&0xf | (lm&0xf)<<4
	q[j-4] |= (ls >> 4) << 6
	q[j] |= (lm >> 4) << 6
}

// quantK45 runs the shared part of quantize_row_q4_K_ref and
// quantize_row_q5_K_ref on one super-block: per-sub-block fits, 6-bit scale
// and min codes, and levels 0..nmax recomputed against the stored scales.
func quantK45(p qkx2Params, x []float32, y []byte, L *[qkK]uint8) {
	var (
		w            [q45Group]float32
		aux          [q45Group]uint8
		scales, mins [q45Groups]float32
		maxScale     float32
		maxMin       float32
	)
	for j := 0; j < q45Groups; j++ {
		xs := x[j*q45Group : (j+1)*q45Group]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		av := sqrt32(sumX2 / q45Group)
		for l, v := range xs {
			w[l] = av + abs32(v)
		}
		scales[j], mins[j] = makeQkx2Quants(p, xs, w[:], L[j*q45Group:(j+1)*q45Group], aux[:])
		maxScale, maxMin = max32(maxScale, scales[j]), max32(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	for j := 0; j < q45Groups; j++ {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		putScaleMinK4(y[kScales:kScales+12], j, ls, lm)
	}
	putF16(y, kD, maxScale/63)
	putF16(y, kDmin, maxMin/63)
	d, dmin := f16(y, kD), f16(y, kDmin)
	for j := 0; j < q45Groups; j++ {
		sc, m := scaleMinK4(y[kScales:], j)
		dj := d * float32(sc)
		if dj == 0 {
			continue
		}
		mj := float32(dmin * float32(m))
		for i := j * q45Group; i < (j+1)*q45Group; i++ {
			L[i] = uint8(clampInt(nearestInt((x[i]+mj)/dj), 0, p.nmax))
		}
	}
}

func quantQ4K(src []float32, dst []byte) {
	var L [qkK]uint8
	p := qkx2Params{nmax: 15, rmin: -1, rdelta: 0.1, nstep: 20}
	for b := 0; b < len(src)/qkK; b++ {
		y := dst[b*q4kBytes : (b+1)*q4kBytes]
		quantK45(p, src[b*qkK:(b+1)*qkK], y, &L)
		qs := y[q4kQs:]
		for j := 0; j < qkK; j += 64 {
			for l := 0; l < 32; l++ {
				qs[j/2+l] = L[j+l] | L[j+l+32]<<4
			}
		}
	}
}

func quantQ5K(src []float32, dst []byte) {
	var L [qkK]uint8
	p := qkx2Params{nmax: 31, rmin: -0.5, rdelta: 0.1, nstep: 15}
	for b := 0; b < len(src)/qkK; b++ {
		y := dst[b*q5kBytes : (b+1)*q5kBytes]
		quantK45(p, src[b*qkK:(b+1)*qkK], y, &L)
		qh, qs := y[kQh:q5kQs], y[q5kQs:]
		clear(qh)
		for j := 0; j < qkK; j += 64 {
			bit := uint(j / 32)
			for l := 0; l < 32; l++ {
				l1, l2 := L[j+l], L[j+l+32]
				qh[l] |= (l1>>4)<<bit | (l2>>4)<<(bit+1)
				qs[j/2+l] = l1&0xf | (l2&0xf)<<4
			}
		}
	}
}

func dequantQ4K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x, y := src[b*q4kBytes:(b+1)*q4kBytes], dst[b*qkK:(b+1)*qkK]
		d, dmin := f16(x, kD), f16(x, kDmin)
		for i := range y {
			sc, m := scaleMinK4(x[kScales:], i/q45Group)
			y[i] = float32(d*float32(sc)*float32(q4kLevel(x, i))) - float32(dmin*float32(m))
		}
	}
}

func dequantQ5K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x, y := src[b*q5kBytes:(b+1)*q5kBytes], dst[b*qkK:(b+1)*qkK]
		d, dmin := f16(x, kD), f16(x, kDmin)
		for i := range y {
			sc, m := scaleMinK4(x[kScales:], i/q45Group)
			y[i] = float32(d*float32(sc)*float32(q5kLevel(x, i))) - float32(dmin*float32(m))
		}
	}
}

// q5kLevel returns element i's 5-bit level: a nibble plus bit i/32 of qh[i%32].
func q5kLevel(x []byte, i int) uint8 {
	q := x[q5kQs+i/64*32+i%32] >> (4 * uint(i%64/32)) & 0xf
	return q | (x[kQh+i%32]>>(i/32)&1)<<4
}
