package quant

import "math"

// The helpers below follow llama.cpp's K-quant search routines step by step.
// Every float32 product that feeds an addition is wrapped in float32(...) so
// no Go port may fuse it into an FMA: the C reference is built without
// contraction, and byte-exact output depends on the same roundings.

const (
	qkK         = 256   // elements per K-quant super-block
	groupMaxEps = 1e-15 // below this the group counts as all zero
)

// nearestInt rounds to nearest, ties to even, with llama.cpp's magic-number
// trick (valid for |f| ≤ 4194303; outside that range it wraps like C does).
func nearestInt(f float32) int32 {
	bits := int32(math.Float32bits(float32(f) + 12582912)) // float32(f): never fuse a caller's product
	return bits&0x007fffff - 0x00400000
}

func clampInt(v, lo, hi int32) int32 { return max(lo, min(hi, v)) }

func sqrt32(v float32) float32 { return float32(math.Sqrt(float64(v))) }

// makeQxQuants picks a symmetric scale for x with levels -nmax..nmax-1
// weighted by x² (make_qx_quants, rmse_type 1, no importance weights). L gets
// level+nmax; the scale is returned.
func makeQxQuants(nmax int32, x []float32, L []int8) float32 {
	maxv, amax := signedAbsMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fmax := float32(nmax)
	iscale := float32(-nmax) / maxv
	sumlx, suml2 := qxSums(nmax, x, iscale)
	qxFill(nmax, x, iscale, L)
	scale := float32(0)
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fmax + float32(0.1*float32(is))) / maxv
		sumlx, suml2 = qxSums(nmax, x, iscale)
		if suml2 > 0 && sumlx*sumlx > best*suml2 {
			qxFill(nmax, x, iscale, L)
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// qxSums returns Σw·x·l and Σw·l² with w = x² for levels l = round(iscale·x).
func qxSums(nmax int32, x []float32, iscale float32) (sumlx, suml2 float32) {
	for _, v := range x {
		l := float32(clampInt(nearestInt(iscale*v), -nmax, nmax-1))
		w := v * v
		sumlx += float32(w * v * l)
		suml2 += float32(w * l * l)
	}
	return sumlx, suml2
}

func qxFill(nmax int32, x []float32, iscale float32, L []int8) {
	for i, v := range x {
		L[i] = int8(nmax + clampInt(nearestInt(iscale*v), -nmax, nmax-1))
	}
}

// makeQ3Quants is make_q3_quants with do_rmse: start from the max-based
// scale, then greedily move single levels while the weighted fit improves.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	maxv, amax := signedAbsMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	iscale := float32(-nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampInt(nearestInt(iscale*v), -nmax, nmax-1)
		L[i] = int8(l)
		w := v * v
		sumlx += float32(w * v * float32(l))
		suml2 += float32(w * float32(l) * float32(l))
	}
	for try := 0; try < 5; try++ {
		changed := false
		for i, v := range x {
			w := v * v
			li := float32(L[i])
			slx := sumlx - float32(w*v*li)
			if !(slx > 0) {
				continue
			}
			sl2 := suml2 - float32(w*li*li)
			nl := clampInt(nearestInt(v*sl2/slx), -nmax, nmax-1)
			if nl == int32(L[i]) {
				continue
			}
			fl := float32(nl)
			slx += float32(w * v * fl)
			sl2 += float32(w * fl * fl)
			if sl2 > 0 && slx*slx*suml2 > sumlx*sumlx*sl2 {
				L[i], sumlx, suml2 = int8(nl), slx, sl2
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	return sumlx / suml2
}

// qkx2Params are the search settings of make_qkx2_quants.
type qkx2Params struct {
	nmax         int32
	rmin, rdelta float32
	nstep        int
	useMAD       bool // absolute instead of squared error
}

// makeQkx2Quants fits x ≈ scale·L - theMin with L in 0..nmax (min ≤ 0),
// trying nstep+1 candidate scales and refining each by weighted least
// squares. It returns scale and theMin (make_qkx2_quants).
func makeQkx2Quants(p qkx2Params, x, w []float32, L, aux []uint8) (scale, theMin float32) {
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < len(x); i++ {
		lo, hi = min32(lo, x[i]), max32(hi, x[i])
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L)
		return 0, -lo
	}
	nm := float32(p.nmax)
	iscale := nm / (hi - lo)
	scale = 1 / iscale
	qkxLevels(p.nmax, x, iscale, lo, L)
	best := qkxError(p.useMAD, x, w, L, scale, lo)
	if p.nstep < 1 {
		return scale, -lo
	}
	for is := 0; is <= p.nstep; is++ {
		iscale = (p.rmin + float32(p.rdelta*float32(is)) + nm) / (hi - lo)
		qkxLevels(p.nmax, x, iscale, lo, aux)
		s, m, ok := qkxFit(x, w, aux, sumW, sumX)
		if !ok {
			continue
		}
		if e := qkxError(p.useMAD, x, w, aux, s, m); e < best {
			copy(L, aux)
			best, scale, lo = e, s, m
		}
	}
	return scale, -lo
}

// qkxLevels sets L[i] = clamp(round(iscale·(x[i]-lo)), 0, nmax).
func qkxLevels(nmax int32, x []float32, iscale, lo float32, L []uint8) {
	for i, v := range x {
		L[i] = uint8(clampInt(nearestInt(iscale*(v-lo)), 0, nmax))
	}
}

// qkxError is Σ w·err with err = |scale·L+min-x| or its square.
func qkxError(useMAD bool, x, w []float32, L []uint8, scale, mn float32) float32 {
	var e float32
	for i, v := range x {
		diff := float32(scale*float32(L[i])) + mn - v
		if useMAD {
			diff = abs32(diff)
		} else {
			diff *= diff
		}
		e += float32(w[i] * diff)
	}
	return e
}

// qkxFit solves the weighted least-squares scale and min for fixed levels,
// clamping the min to ≤ 0; ok is false when the system is degenerate.
func qkxFit(x, w []float32, L []uint8, sumW, sumX float32) (scale, mn float32, ok bool) {
	var sumL, sumL2, sumXL float32
	for i, v := range x {
		l := float32(L[i])
		sumL += float32(w[i] * l)
		sumL2 += float32(w[i] * l * l)
		sumXL += float32(w[i] * l * v)
	}
	D := float32(sumW*sumL2) - float32(sumL*sumL)
	if !(D > 0) {
		return 0, 0, false
	}
	scale = (float32(sumW*sumXL) - float32(sumX*sumL)) / D
	mn = (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
	if mn > 0 {
		mn = 0
		scale = sumXL / sumL2
	}
	return scale, mn, true
}

// min32 and max32 mirror C's `if (x < m) m = x` updates (NaN never wins).
func min32(m, x float32) float32 {
	if x < m {
		return x
	}
	return m
}

func max32(m, x float32) float32 {
	if x > m {
		return x
	}
	return m
}
