package quant

// The 1-bit lattice formats: 256 values per block, eight 32-value
// sub-blocks of four 8-value points from iq1sGrid (values −1, 0, 1),
// each shifted by ±1/8:
//
//	IQ1_S (50 bytes): d f16 | 32 grid index low bytes | per sub-block a u16:
//	        three index high bits per group (bits 0–11), a 3-bit scale s
//	        (12–14) and the shift's sign (15); values d·(2s+1)·(point ± 1/8)
//	IQ1_M (56 bytes): 32 grid index low bytes | 16 bytes, one per pair of
//	        groups: the high bits and shift sign of each (low and high
//	        nibble) | 8 bytes: eight 6-bit pairs of 3-bit scales (groups
//	        0–1, 2–3), and in the top nibble of each u16, d as binary16
//
// Dot products with Q8_K follow ggml's generic kernels: exact integer sums
// of point·a and of the shifts' (±1)·a per super-block, then
// d_w·d_a·(Σ + Σshift/8).
const (
	iq1sBytes   = 50
	iq1sQh      = 34
	iq1mBytes   = 56
	iq1mQh      = 32
	iq1mScales  = 48
	iq1Delta    = 0.125 // IQ1S_DELTA and IQ1M_DELTA of ggml-common.h
	iq1GridMask = 0x700
)

// iq1sGroup returns group l of sub-block ib: its point, the 3-bit scale,
// and whether the shift is negative.
func iq1sGroup(x []byte, ib, l int) (point uint64, s uint32, neg bool) {
	qh := u16(x, iq1sQh+2*ib)
	idx := uint32(x[2+4*ib+l]) | (qh>>(3*uint(l))&7)<<8
	return iq1sGrid[idx], qh >> 12 & 7, qh&0x8000 != 0
}

// iq1mGroup returns the same for IQ1_M.
func iq1mGroup(x []byte, ib, l int) (point uint64, s uint32, neg bool) {
	qh := uint32(x[iq1mQh+2*ib+l/2])
	idx := uint32(x[4*ib+l]) | qh<<(8-4*uint(l%2))&iq1GridMask
	sc := u16(x, iq1mScales+2*(ib/2))
	s = sc >> (6*uint(ib%2) + 3*uint(l/2)) & 7
	return iq1sGrid[idx], s, qh&(0x08<<(4*uint(l%2))) != 0
}

// iq1mScale is IQ1_M's d: the top nibbles of the four scale words.
func iq1mScale(x []byte) float32 {
	var h uint32
	for k := 0; k < 4; k++ {
		h |= u16(x, iq1mScales+2*k) >> 12 << (4 * uint(k))
	}
	return FP16ToFP32(uint16(h))
}

type iq1GroupFunc func(x []byte, ib, l int) (uint64, uint32, bool)

func dequantIQ1(blockBytes int, group iq1GroupFunc, scale func(x []byte) float32) func(src []byte, dst []float32) {
	return func(src []byte, dst []float32) {
		for b := 0; b < len(dst)/qkK; b++ {
			x, y := src[b*blockBytes:(b+1)*blockBytes], dst[b*qkK:(b+1)*qkK]
			d := scale(x)
			for ib := 0; ib < iq2SubBlocks; ib++ {
				for l := 0; l < iq2Groups; l++ {
					p, s, neg := group(x, ib, l)
					dl := d * float32(2*s+1)
					delta := float32(iq1Delta)
					if neg {
						delta = -delta
					}
					for j := 0; j < 8; j++ {
						y[32*ib+8*l+j] = dl * (float32(int8(p>>(8*uint(j)))) + delta)
					}
				}
			}
		}
	}
}

func dotIQ1(blockBytes int, group iq1GroupFunc, scale func(x []byte) float32) func(n int, w, a []byte) float32 {
	return func(n int, w, a []byte) float32 {
		var sumf float32
		for b := 0; b < n/qkK; b++ {
			x, y := w[b*blockBytes:(b+1)*blockBytes], a[b*q8kBytes:(b+1)*q8kBytes]
			yd, q8 := q8kView(y)
			var sumi, sumShift int32
			for ib := 0; ib < iq2SubBlocks; ib++ {
				a8 := q8kSub(q8, ib)
				for l := 0; l < iq2Groups; l++ {
					p, s, neg := group(x, ib, l)
					var lsum, asum int32
					for j := 0; j < 8; j++ {
						v := int32(int8(a8[8*l+j]))
						lsum += int32(int8(p>>(8*uint(j)))) * v
						asum += v
					}
					if neg {
						asum = -asum
					}
					ls := int32(2*s + 1)
					sumi += ls * lsum
					sumShift += ls * asum
				}
			}
			sumf += float32(scale(x)*yd) * float32(float32(sumi)+float32(iq1Delta*float32(sumShift)))
		}
		return sumf
	}
}

var (
	iq1sScale   = func(x []byte) float32 { return f16(x, 0) }
	dequantIQ1S = dequantIQ1(iq1sBytes, iq1sGroup, iq1sScale)
	dequantIQ1M = dequantIQ1(iq1mBytes, iq1mGroup, iq1mScale)
	dotIQ1S     = dotIQ1(iq1sBytes, iq1sGroup, iq1sScale)
	dotIQ1M     = dotIQ1(iq1mBytes, iq1mGroup, iq1mScale)
)
