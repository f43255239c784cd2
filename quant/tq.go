package quant

import "math"

// The ternary formats: values d·t with t in {−1, 0, 1}, 256 per block.
//
//	TQ1_0 (54 bytes): 48 bytes of five trits each | 4 bytes of four trits |
//	        d f16. A byte holds its trits as a fixed-point fraction: byte
//	        ⌈q·256/243⌉ for the base-3 number q, whose most significant trit
//	        is recovered by (byte·3) >> 8, the next after multiplying the
//	        byte by 3 (mod 256), and so on. Bytes 0–31 hold values
//	        32n + m (n = 0..4, m = byte), bytes 32–47 values 160 + 16n + m,
//	        and bytes 48–51 values 240 + 4n + m.
//	TQ2_0 (66 bytes): 64 bytes of four 2-bit fields (t+1) | d f16; byte
//	        32h + m holds values 128h + 32l + m in bits 2l.
//
// The dot products with Q8_K are one exact integer sum per block times
// d_w·d_a, as ggml's kernels.
const (
	tq1Bytes = 54
	tq1Qh    = 48
	tq1D     = 52
	tq2Bytes = 66
	tq2D     = 64
)

// tq1Trit returns trit n (0 = most significant) of a TQ1_0 byte, minus 1.
func tq1Trit(b byte, n int) int32 {
	q := b
	for ; n > 0; n-- {
		q *= 3
	}
	return int32(uint16(q)*3>>8) - 1
}

// tq1Value returns element i of a TQ1_0 block as −1, 0 or 1.
func tq1Value(x []byte, i int) int32 {
	switch {
	case i < 160:
		return tq1Trit(x[i%32], i/32)
	case i < 240:
		r := i - 160
		return tq1Trit(x[32+r%16], r/16)
	}
	r := i - 240
	return tq1Trit(x[tq1Qh+r%4], r/4)
}

// tq2Value returns element i of a TQ2_0 block as −1, 0 or 1 (2-bit fields
// of 3 give 2, as ggml reads them).
func tq2Value(x []byte, i int) int32 {
	h, r := i/128, i%128
	return int32(x[32*h+r%32]>>(2*uint(r/32))&3) - 1
}

func dequantTQ(blockBytes, dOff int, value func(x []byte, i int) int32) func(src []byte, dst []float32) {
	return func(src []byte, dst []float32) {
		for b := 0; b < len(dst)/qkK; b++ {
			x, y := src[b*blockBytes:(b+1)*blockBytes], dst[b*qkK:(b+1)*qkK]
			d := f16(x, dOff)
			for i := range y {
				y[i] = float32(value(x, i)) * d
			}
		}
	}
}

func dotTQ(blockBytes, dOff int, value func(x []byte, i int) int32) func(n int, w, a []byte) float32 {
	return func(n int, w, a []byte) float32 {
		var sumf float32
		for b := 0; b < n/qkK; b++ {
			x, y := w[b*blockBytes:(b+1)*blockBytes], a[b*q8kBytes:(b+1)*q8kBytes]
			yd, q8 := q8kView(y)
			var sumi int32
			for i := 0; i < qkK; i++ {
				sumi += value(x, i) * int32(int8(q8[i]))
			}
			sumf += float32(sumi) * float32(f16(x, dOff)*yd)
		}
		return sumf
	}
}

// tqTrit is llama.cpp's lroundf(v·id) + 1: 0, 1 or 2 for |v·id| ≤ 1.
func tqTrit(v, id float32) int32 {
	return int32(math.Round(float64(float32(v*id)))) + 1
}

// quantTQ1 is quantize_row_tq1_0_ref: d = max |x|, trits round(x/d).
func quantTQ1(src []float32, dst []byte) {
	for b := 0; b < len(src)/qkK; b++ {
		x, y := src[b*qkK:(b+1)*qkK], dst[b*tq1Bytes:(b+1)*tq1Bytes]
		d := cMaxAbs(x)
		id := inv(d)
		putF16(y, tq1D, d)
		pack := func(first, stride, count int) byte {
			var q uint8
			for n := 0; n < count; n++ {
				q = q*3 + uint8(tqTrit(x[first+n*stride], id))
			}
			if count == 4 {
				q *= 3 // the first value in the most significant trit
			}
			return byte((uint16(q)*256 + 242) / 243) // ⌈q·256/243⌉
		}
		for m := 0; m < 32; m++ {
			y[m] = pack(m, 32, 5)
		}
		for m := 0; m < 16; m++ {
			y[32+m] = pack(160+m, 16, 5)
		}
		for j := 0; j < 4; j++ {
			y[tq1Qh+j] = pack(240+j, 4, 4)
		}
	}
}

// quantTQ2 is quantize_row_tq2_0_ref.
func quantTQ2(src []float32, dst []byte) {
	for b := 0; b < len(src)/qkK; b++ {
		x, y := src[b*qkK:(b+1)*qkK], dst[b*tq2Bytes:(b+1)*tq2Bytes]
		d := cMaxAbs(x)
		id := inv(d)
		putF16(y, tq2D, d)
		for h := 0; h < 2; h++ {
			for m := 0; m < 32; m++ {
				var q byte
				for l := 0; l < 4; l++ {
					q += byte(tqTrit(x[128*h+32*l+m], id)&3) << (2 * uint(l))
				}
				y[32*h+m] = q
			}
		}
	}
}

var (
	dequantTQ1 = dequantTQ(tq1Bytes, tq1D, tq1Value)
	dequantTQ2 = dequantTQ(tq2Bytes, tq2D, tq2Value)
	dotTQ1     = dotTQ(tq1Bytes, tq1D, tq1Value)
	dotTQ2     = dotTQ(tq2Bytes, tq2D, tq2Value)
)
