package quant

// The 2-bit lattice formats, 256 values per block, eight 32-value
// sub-blocks of four 8-value groups:
//
//	IQ2_XXS (66 bytes): d f16 | per sub-block two u32: four grid indices
//	        (bytes), then four 7-bit sign codes and a 4-bit scale s on top
//	        (bits 28–31); the values are d·(0.5+s)/4·point
//	IQ2_XS (74 bytes): d f16 | 32 u16: 9-bit grid index | 7-bit sign code,
//	        four per sub-block | 8 bytes of two 4-bit scales (groups 0–1
//	        and 2–3)
//	IQ2_S (82 bytes): d f16 | 32 bytes of grid index low bits | 32 bytes of
//	        signs (a byte per group) | 8 bytes of index high bits (two per
//	        group) | 8 bytes of scales as IQ2_XS
//
// Dot products with Q8_K follow ggml's generic kernels: one exact integer
// sum per super-block (scales 2s+1), times d_w·d_a, the total times 1/8.
const (
	iq2xxsBytes   = 66
	iq2xsBytes    = 74
	iq2xsScales   = 66
	iq2sBytes     = 82
	iq2sSigns     = 34
	iq2sQh        = 66
	iq2sScales    = 74
	iq2Groups     = 4  // 8-value groups per sub-block
	iq2SubBlocks  = 8  // 32-value sub-blocks per block
	iq2GroupElems = 8  // values per group
	iq2SubElems   = 32 // values per sub-block
)

// iq2Scale is ggml's d·(0.5 + s)·0.25 in float32 operation order.
func iq2Scale(d float32, s uint32) float32 {
	return float32(d*float32(0.5+float32(s))) * 0.25
}

// iq2xxsGroup returns sub-block ib's group l: its lattice point and signs,
// and the sub-block's 4-bit scale.
func iq2xxsGroup(x []byte, ib, l int) (point uint64, signs uint8, s uint32) {
	aux0, aux1 := u32(x, 2+8*ib), u32(x, 2+8*ib+4)
	return iq2xxsGrid[aux0>>(8*uint(l))&0xff], ksigns(aux1 >> (7 * uint(l))), aux1 >> 28
}

func iq2xsGroup(x []byte, ib, l int) (point uint64, signs uint8, s uint32) {
	q := u16(x, 2+2*(4*ib+l))
	return iq2xsGrid[q&511], ksigns(q >> 9), uint32(x[iq2xsScales+ib]) >> (4 * uint(l/2)) & 0xf
}

func iq2sGroup(x []byte, ib, l int) (point uint64, signs uint8, s uint32) {
	idx := uint32(x[2+4*ib+l]) | uint32(x[iq2sQh+ib])<<(8-2*uint(l))&0x300
	return iq2sGrid[idx], x[iq2sSigns+4*ib+l], uint32(x[iq2sScales+ib]) >> (4 * uint(l/2)) & 0xf
}

type iq2GroupFunc func(x []byte, ib, l int) (uint64, uint8, uint32)

func dequantIQ2(blockBytes int, group iq2GroupFunc) func(src []byte, dst []float32) {
	return func(src []byte, dst []float32) {
		for b := 0; b < len(dst)/qkK; b++ {
			x, y := src[b*blockBytes:(b+1)*blockBytes], dst[b*qkK:(b+1)*qkK]
			d := f16(x, 0)
			for ib := 0; ib < iq2SubBlocks; ib++ {
				for l := 0; l < iq2Groups; l++ {
					p, signs, s := group(x, ib, l)
					db := iq2Scale(d, s)
					for j := 0; j < iq2GroupElems; j++ {
						y[iq2SubElems*ib+iq2GroupElems*l+j] = signedF(db*float32(gridByte(p, j)), signs, j)
					}
				}
			}
		}
	}
}

func dotIQ2(blockBytes int, group iq2GroupFunc) func(n int, w, a []byte) float32 {
	return func(n int, w, a []byte) float32 {
		var sumf float32
		for b := 0; b < n/qkK; b++ {
			x, y := w[b*blockBytes:(b+1)*blockBytes], a[b*q8kBytes:(b+1)*q8kBytes]
			yd, q8 := q8kView(y)
			var bsum int32
			for ib := 0; ib < iq2SubBlocks; ib++ {
				a8 := q8kSub(q8, ib)
				// IQ2_XS and IQ2_S scale groups 0–1 and 2–3 apart.
				var sumi [2]int32
				var s [2]uint32
				for l := 0; l < iq2Groups; l++ {
					p, signs, sc := group(x, ib, l)
					s[l/2] = sc
					for j := 0; j < iq2GroupElems; j++ {
						sumi[l/2] += signed(gridByte(p, j)*int32(int8(a8[8*l+j])), signs, j)
					}
				}
				bsum += sumi[0]*int32(2*s[0]+1) + sumi[1]*int32(2*s[1]+1)
			}
			sumf += float32(f16(x, 0)*yd) * float32(bsum)
		}
		return 0.125 * sumf
	}
}

var (
	dequantIQ2XXS = dequantIQ2(iq2xxsBytes, iq2xxsGroup)
	dequantIQ2XS  = dequantIQ2(iq2xsBytes, iq2xsGroup)
	dequantIQ2S   = dequantIQ2(iq2sBytes, iq2sGroup)
	dotIQ2XXS     = dotIQ2(iq2xxsBytes, iq2xxsGroup)
	dotIQ2XS      = dotIQ2(iq2xsBytes, iq2xsGroup)
	dotIQ2S       = dotIQ2(iq2sBytes, iq2sGroup)
)
