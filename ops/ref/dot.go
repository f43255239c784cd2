package ref

// The dot products below reproduce the accumulation orders of the two
// matmul paths in llama.cpp's AVX-512 build:
//
//   - llamafile's tinyBLAS (prompt batches of 2+ columns when the inner
//     dimension is a multiple of the vector width): one 16-lane accumulator
//     per output, fused multiply-adds along the whole row, one reduction.
//   - ggml_vec_dot_* (single-token decode and the remaining cases): four
//     16-lane accumulators over blocks of 64, folded pairwise, reduced, and a
//     scalar tail.
//
// Inputs are float32 values already rounded to the operand type (f16 and
// bf16 products are exact in float32, so one kernel serves them).

// tinyDot is tinyBLAS's f32/f16 kernel; len(a) must be a multiple of 16.
func tinyDot(a, b []float32) float32 {
	var acc [lanes]float32
	b = b[:len(a)]
	for i := 0; i+lanes <= len(a); i += lanes {
		fmaLanes(&acc, a[i:], b[i:])
	}
	return hsum(&acc)
}

// tinyDotBF16 is tinyBLAS's AVX512_BF16 kernel (vdpbf16ps): lane j of each
// 32-element block adds the odd product, then the even one.
func tinyDotBF16(a, b []float32) float32 {
	var acc [lanes]float32
	b = b[:len(a)]
	for i := 0; i+2*lanes <= len(a); i += 2 * lanes {
		dpbf16(&acc, a[i:i+2*lanes], b[i:i+2*lanes])
	}
	return hsum(&acc)
}

// dpbf16 accumulates one 32-element block into acc as vdpbf16ps does.
func dpbf16(acc *[lanes]float32, a, b []float32) {
	for j := range acc {
		acc[j] += a[2*j+1] * b[2*j+1]
		acc[j] += a[2*j] * b[2*j]
	}
}

// vecBlocks runs ggml_vec_dot's main loop over the leading multiple of 64
// elements and returns the reduced sum and how many elements it consumed.
func vecBlocks(a, b []float32) (float32, int) {
	var acc [4][lanes]float32
	np := len(a) &^ (4*lanes - 1)
	for i := 0; i < np; i += 4 * lanes {
		for k := range acc {
			fmaLanes(&acc[k], a[i+k*lanes:], b[i+k*lanes:])
		}
	}
	return foldHsum(&acc), np
}

// foldHsum is GGML_F32_VEC_REDUCE for four accumulators: (0+2)+(1+3), then
// the 16-lane reduction.
func foldHsum(acc *[4][lanes]float32) float32 {
	var v [lanes]float32
	for j := range v {
		v[j] = (acc[0][j] + acc[2][j]) + (acc[1][j] + acc[3][j])
	}
	return hsum(&v)
}

// vecDotF32 is ggml_vec_dot_f32: the float32 tail adds each product
// rounded to float32, one after the other. GCC does not contract this
// loop into fused multiply-adds: it vectorises the products (VMULPS) and
// adds the lanes in order (VADDSS), as the disassembly of llama.cpp's
// ggml-cpu.o shows and its f32-cache attention scores (head dimension 8:
// all tail) confirm bit for bit.
func vecDotF32(a, b []float32) float32 {
	b = b[:len(a)]
	sum, i := vecBlocks(a, b)
	for ; i < len(a); i++ {
		sum += float32(a[i] * b[i]) // the conversion keeps Go from fusing
	}
	return sum
}

// VecDotF32 returns the dot product of a and b (len(b) >= len(a)) in the
// order of ggml_vec_dot_f32 on AVX-512: four 16-lane fused accumulators
// over whole blocks of 64, folded and reduced, then the tail's rounded
// products added in turn. llama.cpp takes it for Q·Kᵀ over an f32 KV
// cache and for f32 products of one token.
func VecDotF32(a, b []float32) float32 { return vecDotF32(a, b) }

// TinyDotF32 returns the dot product of a and b (len(b) >= len(a), len(a)
// a multiple of 16) in the order of llamafile's tinyBLAS for f32 on
// AVX-512: one 16-lane accumulator of fused multiply-adds, reduced as
// _mm512_reduce_add_ps. llama.cpp takes it for batches of two or more
// tokens, P·V over an f32 KV cache among them.
func TinyDotF32(a, b []float32) float32 { return tinyDot(a, b) }

// vecDotF16 is ggml_vec_dot_f16: the tail is summed in double.
func vecDotF16(a, b []float32) float32 {
	b = b[:len(a)]
	s, i := vecBlocks(a, b)
	sum := float64(s)
	for ; i < len(a); i++ {
		sum += float64(a[i] * b[i])
	}
	return float32(sum)
}

// vecDotBF16 is ggml_vec_dot_bf16 with AVX512_BF16: two vdpbf16ps
// accumulators over blocks of 64, each reduced into a double, double tail.
func vecDotBF16(a, b []float32) float32 {
	var c1, c2 [lanes]float32
	b = b[:len(a)]
	i := 0
	for ; i+4*lanes <= len(a); i += 4 * lanes {
		dpbf16(&c1, a[i:i+2*lanes], b[i:i+2*lanes])
		dpbf16(&c2, a[i+2*lanes:i+4*lanes], b[i+2*lanes:i+4*lanes])
	}
	sum := float64(hsum(&c1))
	sum += float64(hsum(&c2))
	for ; i < len(a); i++ {
		sum += float64(a[i] * b[i])
	}
	return float32(sum)
}

// dotHalf is tinyDot (tiny) or vecDotF16 with the second operand still in
// binary16 bits, for Q·Kᵀ against an F16 cache without a conversion buffer.
func dotHalf(a []float32, b []uint16, tiny bool) float32 {
	b = b[:len(a)]
	var wide [lanes]float32
	if tiny {
		var acc [lanes]float32
		for i := 0; i+lanes <= len(a); i += lanes {
			widenHalves(&wide, b[i:])
			fmaLanes(&acc, a[i:], wide[:])
		}
		return hsum(&acc)
	}
	var acc [4][lanes]float32
	np := len(a) &^ (4*lanes - 1)
	for i := 0; i < np; i += 4 * lanes {
		for k := range acc {
			widenHalves(&wide, b[i+k*lanes:])
			fmaLanes(&acc[k], a[i+k*lanes:], wide[:])
		}
	}
	sum := float64(foldHsum(&acc))
	for i := np; i < len(a); i++ {
		sum += float64(a[i] * halfToFloat(b[i]))
	}
	return float32(sum)
}

// widenHalves converts the first 16 values of h.
func widenHalves(dst *[lanes]float32, h []uint16) {
	h = h[:lanes]
	for j := range dst {
		dst[j] = halfToFloat(h[j])
	}
}
