package quant

// Dot products of legacy blocks with Q8_0 / Q8_1 activations: an integer sum
// per block, then one float32 term per block in ggml's operand order.

func dotQ4_0(n int, w, a []byte) float32 {
	var sum float32
	for b := 0; b < n/qk; b++ {
		x, y := w[b*q4_0Bytes:(b+1)*q4_0Bytes], a[b*q8_0Bytes:(b+1)*q8_0Bytes]
		var isum int32
		for j, q := range x[2:] {
			isum += (int32(q&0xf) - 8) * int32(int8(y[2+j]))
			isum += (int32(q>>4) - 8) * int32(int8(y[2+j+qk/2]))
		}
		sum += float32(float32(float32(isum)*f16(x, 0)) * f16(y, 0))
	}
	return sum
}

func dotQ4_1(n int, w, a []byte) float32 {
	var sum float32
	for b := 0; b < n/qk; b++ {
		x, y := w[b*q4_1Bytes:(b+1)*q4_1Bytes], a[b*q8_1Bytes:(b+1)*q8_1Bytes]
		var isum int32
		for j, q := range x[4:] {
			isum += int32(q&0xf) * int32(int8(y[4+j]))
			isum += int32(q>>4) * int32(int8(y[4+j+qk/2]))
		}
		sum += minTerm(f16(x, 0), f16(y, 0), isum, f16(x, 2), f16(y, 2))
	}
	return sum
}

// minTerm is (dw·da)·isum + mw·sa, the per-block value of the offset formats.
func minTerm(dw, da float32, isum int32, mw, sa float32) float32 {
	return float32(float32(dw*da)*float32(isum)) + float32(mw*sa)
}

func dotQ5_0(n int, w, a []byte) float32 {
	var (
		sum float32
		q   [qk]int32
	)
	for b := 0; b < n/qk; b++ {
		x, y := w[b*q5_0Bytes:(b+1)*q5_0Bytes], a[b*q8_0Bytes:(b+1)*q8_0Bytes]
		unpackQ5(x[2:6], x[6:], &q)
		var isum int32
		for j, v := range q {
			isum += (v - 16) * int32(int8(y[2+j]))
		}
		sum += float32(float32(f16(x, 0)*f16(y, 0)) * float32(isum))
	}
	return sum
}

func dotQ5_1(n int, w, a []byte) float32 {
	var (
		sum float32
		q   [qk]int32
	)
	for b := 0; b < n/qk; b++ {
		x, y := w[b*q5_1Bytes:(b+1)*q5_1Bytes], a[b*q8_1Bytes:(b+1)*q8_1Bytes]
		unpackQ5(x[4:8], x[8:], &q)
		var isum int32
		for j, v := range q {
			isum += v * int32(int8(y[4+j]))
		}
		sum += minTerm(f16(x, 0), f16(y, 0), isum, f16(x, 2), f16(y, 2))
	}
	return sum
}

func dotQ8_0(n int, w, a []byte) float32 {
	var sum float32
	for b := 0; b < n/qk; b++ {
		x, y := w[b*q8_0Bytes:(b+1)*q8_0Bytes], a[b*q8_0Bytes:(b+1)*q8_0Bytes]
		var isum int32
		for j := 2; j < q8_0Bytes; j++ {
			isum += int32(int8(x[j])) * int32(int8(y[j]))
		}
		sum += float32(float32(isum) * float32(f16(x, 0)*f16(y, 0)))
	}
	return sum
}
