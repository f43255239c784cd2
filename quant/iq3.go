package quant

// The 3-bit lattice formats, 256 values per block, eight 32-value
// sub-blocks of eight 4-value points (signs per 8 values):
//
//	IQ3_XXS (98 bytes): d f16 | 64 grid indices (bytes) | per sub-block a
//	        u32 of four 7-bit sign codes and a 4-bit scale s on top; values
//	        d·(0.5+s)/2·point
//	IQ3_S (110 bytes): d f16 | 64 grid index low bits | 8 bytes of ninth
//	        bits (one byte per sub-block) | 32 bytes of signs | 4 bytes of
//	        two 4-bit scales s; values d·(1+2s)·point
//
// Dot products with Q8_K follow ggml's generic kernels: one exact integer
// sum per super-block (scales 2s+1) times d_w·d_a; IQ3_XXS's total times 1/4.
const (
	iq3xxsBytes  = 98
	iq3xxsSigns  = 66
	iq3sBytes    = 110
	iq3sQh       = 66
	iq3sSigns    = 74
	iq3sScales   = 106
	iq3PointVals = 4
)

// iq3Group returns the two lattice points and the signs of 8-value group l
// of sub-block ib, and the sub-block's 4-bit scale.
type iq3GroupFunc func(x []byte, ib, l int) (p0, p1 uint32, signs uint8, s uint32)

func iq3xxsGroup(x []byte, ib, l int) (p0, p1 uint32, signs uint8, s uint32) {
	aux := u32(x, iq3xxsSigns+4*ib)
	q := x[2+8*ib+2*l:]
	return iq3xxsGrid[q[0]], iq3xxsGrid[q[1]], ksigns(aux >> (7 * uint(l))), aux >> 28
}

func iq3sGroup(x []byte, ib, l int) (p0, p1 uint32, signs uint8, s uint32) {
	qh := uint32(x[iq3sQh+ib])
	q := x[2+8*ib+2*l:]
	i0 := uint32(q[0]) | qh<<(8-2*uint(l))&256
	i1 := uint32(q[1]) | qh<<(7-2*uint(l))&256
	return iq3sGrid[i0], iq3sGrid[i1], x[iq3sSigns+4*ib+l], uint32(x[iq3sScales+ib/2]) >> (4 * uint(ib%2)) & 0xf
}

// iq3Point returns value j (0..7) of a group of two 4-value points.
func iq3Point(p0, p1 uint32, j int) int32 {
	if j < iq3PointVals {
		return gridByte4(p0, j)
	}
	return gridByte4(p1, j-iq3PointVals)
}

func dequantIQ3(blockBytes int, group iq3GroupFunc, scale func(d float32, s uint32) float32) func(src []byte, dst []float32) {
	return func(src []byte, dst []float32) {
		for b := 0; b < len(dst)/qkK; b++ {
			x, y := src[b*blockBytes:(b+1)*blockBytes], dst[b*qkK:(b+1)*qkK]
			d := f16(x, 0)
			for ib := 0; ib < iq2SubBlocks; ib++ {
				for l := 0; l < iq2Groups; l++ {
					p0, p1, signs, s := group(x, ib, l)
					db := scale(d, s)
					for j := 0; j < 8; j++ {
						y[32*ib+8*l+j] = signedF(db*float32(iq3Point(p0, p1, j)), signs, j)
					}
				}
			}
		}
	}
}

func dotIQ3(blockBytes int, group iq3GroupFunc, final float32) func(n int, w, a []byte) float32 {
	return func(n int, w, a []byte) float32 {
		var sumf float32
		for b := 0; b < n/qkK; b++ {
			x, y := w[b*blockBytes:(b+1)*blockBytes], a[b*q8kBytes:(b+1)*q8kBytes]
			yd, q8 := q8kView(y)
			var bsum int32
			for ib := 0; ib < iq2SubBlocks; ib++ {
				a8 := q8kSub(q8, ib)
				var sumi int32
				var s uint32
				for l := 0; l < iq2Groups; l++ {
					p0, p1, signs, sc := group(x, ib, l)
					s = sc
					for j := 0; j < 8; j++ {
						sumi += signed(iq3Point(p0, p1, j)*int32(int8(a8[8*l+j])), signs, j)
					}
				}
				bsum += sumi * int32(2*s+1)
			}
			sumf += float32(f16(x, 0)*yd) * float32(bsum)
		}
		if final != 1 {
			return final * sumf
		}
		return sumf
	}
}

var (
	dequantIQ3XXS = dequantIQ3(iq3xxsBytes, iq3xxsGroup, func(d float32, s uint32) float32 {
		return float32(d*float32(0.5+float32(s))) * 0.5
	})
	dequantIQ3S = dequantIQ3(iq3sBytes, iq3sGroup, func(d float32, s uint32) float32 {
		return d * float32(1+2*s)
	})
	dotIQ3XXS = dotIQ3(iq3xxsBytes, iq3xxsGroup, 0.25)
	dotIQ3S   = dotIQ3(iq3sBytes, iq3sGroup, 1)
)
