package quant

import (
	"encoding/binary"
	"math"
)

// K-quant dot products with Q8_K activations. Like ggml's generic kernels,
// Q3_K…Q6_K accumulate integer products in 8 lanes (lane = element mod 8)
// and add d·lane to 8 float32 lane sums per super-block; the lanes are summed
// at the end.

// q8kView gives the parts of a Q8_K block.
func q8kView(y []byte) (d float32, qs []byte) {
	return math.Float32frombits(binary.LittleEndian.Uint32(y)), y[q8kQs:q8kSums]
}

func q8kBsum(y []byte, j int) int32 {
	return int32(int16(binary.LittleEndian.Uint16(y[q8kSums+2*j:])))
}

// laneSums returns Σ scale[i/16]·lv[i]·q8[i] over the elements i ≡ l mod 8.
func laneSums(lv *[qkK]int32, q8 []byte, scale *[16]int32) (aux [8]int32) {
	for i, v := range lv {
		aux[i%8] += scale[i/16] * (v * int32(int8(q8[i])))
	}
	return aux
}

func addLanes(sums *[8]float32, d float32, aux *[8]int32) {
	for l, v := range aux {
		sums[l] += float32(d * float32(v))
	}
}

func finishLanes(sum float32, sums *[8]float32) float32 {
	for _, s := range sums {
		sum += s
	}
	return sum
}

func dotQ2K(n int, w, a []byte) float32 {
	var sum float32
	for b := 0; b < n/qkK; b++ {
		x, y := w[b*q2kBytes:(b+1)*q2kBytes], a[b*q8kBytes:(b+1)*q8kBytes]
		yd, q8 := q8kView(y)
		var isum, summs int32
		for j := 0; j < q2kGroups; j++ {
			summs += q8kBsum(y, j) * int32(x[j]>>4)
		}
		for i := 0; i < qkK; i++ {
			q := int32(x[q2kQs+i/128*32+i%32] >> (uint(i%128/32) * 2) & 3)
			isum += int32(x[i/q2kGroup]&0xf) * q * int32(int8(q8[i]))
		}
		dall, dmin := yd*f16(x, q2kD), yd*f16(x, q2kDmin)
		sum += float32(dall*float32(isum)) - float32(dmin*float32(summs))
	}
	return sum
}

func dotQ3K(n int, w, a []byte) float32 {
	var (
		sums  [8]float32
		lv    [qkK]int32
		scale [16]int32
	)
	for b := 0; b < n/qkK; b++ {
		x, y := w[b*q3kBytes:(b+1)*q3kBytes], a[b*q8kBytes:(b+1)*q8kBytes]
		yd, q8 := q8kView(y)
		for i := range lv {
			lv[i] = q3kLevel(x, i)
		}
		for j := range scale {
			scale[j] = q3kScale(x[q3kScales:q3kD], j)
		}
		aux := laneSums(&lv, q8, &scale)
		addLanes(&sums, f16(x, q3kD)*yd, &aux)
	}
	return finishLanes(0, &sums)
}

// dotK45 is the shared Q4_K/Q5_K kernel; level returns element i's level.
func dotK45(n, blockBytes int, w, a []byte, level func(x []byte, i int) uint8) float32 {
	var (
		sum   float32
		sums  [8]float32
		lv    [qkK]int32
		scale [16]int32
	)
	for b := 0; b < n/qkK; b++ {
		x, y := w[b*blockBytes:(b+1)*blockBytes], a[b*q8kBytes:(b+1)*q8kBytes]
		yd, q8 := q8kView(y)
		for i := range lv {
			lv[i] = int32(level(x, i))
		}
		var mins int32
		for j := 0; j < q45Groups; j++ {
			sc, m := scaleMinK4(x[kScales:], j)
			scale[2*j], scale[2*j+1] = int32(sc), int32(sc)
			mins += int32(m) * (q8kBsum(y, 2*j) + q8kBsum(y, 2*j+1))
		}
		aux := laneSums(&lv, q8, &scale)
		addLanes(&sums, f16(x, kD)*yd, &aux)
		sum -= float32(f16(x, kDmin) * yd * float32(mins))
	}
	return finishLanes(sum, &sums)
}

func q4kLevel(x []byte, i int) uint8 {
	return x[q4kQs+i/64*32+i%32] >> (4 * uint(i%64/32)) & 0xf
}

func dotQ4K(n int, w, a []byte) float32 { return dotK45(n, q4kBytes, w, a, q4kLevel) }
func dotQ5K(n int, w, a []byte) float32 { return dotK45(n, q5kBytes, w, a, q5kLevel) }

func dotQ6K(n int, w, a []byte) float32 {
	var (
		sums  [8]float32
		lv    [qkK]int32
		scale [16]int32
	)
	for b := 0; b < n/qkK; b++ {
		x, y := w[b*q6kBytes:(b+1)*q6kBytes], a[b*q8kBytes:(b+1)*q8kBytes]
		yd, q8 := q8kView(y)
		for i := range lv {
			lv[i] = q6kLevel(x, i)
		}
		for j := range scale {
			scale[j] = int32(int8(x[q6kScales+j]))
		}
		aux := laneSums(&lv, q8, &scale)
		addLanes(&sums, f16(x, q6kD)*yd, &aux)
	}
	return finishLanes(0, &sums)
}
