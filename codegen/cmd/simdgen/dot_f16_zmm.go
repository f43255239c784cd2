package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// AVX-512 F16 dot product in the order of ggml_vec_dot_f16 in llama.cpp's
// AVX-512 build, the path it takes for one token (llamafile's sgemm
// declines batches of one) and for lengths that are not whole 16-value
// chunks: four 16-lane accumulators over 64-value blocks (accumulator j
// takes values 16j…16j+15 of each block), folded (0+2)+(1+3) lane by
// lane and reduced as _mm512_reduce_add_ps, then widened to float64, the
// tail's products added one by one in float64, and the total rounded to
// float32. VCVTPH2PS widens sixteen halves into a zmm; products of two
// binary16 values are exact in float32, so each FMA rounds once as ggml's
// does. The kernel takes any length (table chunk 1).
//
// There is no multi-row kernel: VecDotRows runs this one row at a time,
// which keeps its bits. Decode matmuls take decode_float.go's kernel,
// which sums each row in this order and prefetches the next row.

const f16DotBlock = 64 // values per iteration: four zmm of sixteen

// foldZmm returns, in a ymm, the sum of z's two 256-bit halves.
func foldZmm(z VecVirtual) VecVirtual {
	y := YMM()
	VEXTRACTF64X4(U8(1), z, y)
	VADDPS(z.AsY(), y, y)
	return y
}

func genDotF16Zmm(v variant, reg *registry) {
	one := fname("dotF16", v)
	TEXT(one, NOSPLIT, "func(n int, w, a *byte) float32")
	Doc(one+" returns the dot product of n binary16 values at w and a, summed",
		"as ggml_vec_dot_f16's AVX-512 path sums them: 64-value blocks in four",
		"float32 accumulators, their reduced sum and the tail's products in float64.")
	n := Load(Param("n"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	nb := GP64()
	MOVQ(n, nb)
	SHRQ(U8(6), nb)
	accs := zeroedZmm(4)
	loopBlocks(nb, func() {
		for i, acc := range accs {
			x, y := ZMM(), ZMM()
			VCVTPH2PS(Mem{Base: w, Disp: 32 * i}, x)
			VCVTPH2PS(Mem{Base: a, Disp: 32 * i}, y)
			VFMADD231PS(y, x, acc)
		}
		ADDQ(U32(2*f16DotBlock), w)
		ADDQ(U32(2*f16DotBlock), a)
	})
	VADDPS(accs[2], accs[0], accs[0])
	VADDPS(accs[3], accs[1], accs[1])
	VADDPS(accs[1], accs[0], accs[0])
	s := hsum(foldZmm(accs[0]))
	VCVTSS2SD(s, s, s)
	f16Tail(n, w, a, s)
	VCVTSD2SS(s, s, s)
	VZEROUPPER()
	Store(s, ReturnIndex(0))
	RET()
	reg.dot(v, "TypeF16", one, "", 1)
}

// f16Tail adds to the float64 in sum the products of the last n mod 64
// binary16 values at w and a, one at a time (each exact in float32).
func f16Tail(n, w, a Register, sum VecVirtual) {
	rest := GP64()
	MOVQ(n, rest)
	ANDQ(U32(f16DotBlock-1), rest)
	JZ(LabelRef("tailDone"))
	Label("tail")
	x, y := XMM(), XMM()
	for _, p := range []struct {
		m Register
		x VecVirtual
	}{{w, x}, {a, y}} {
		t := GP32()
		MOVWLZX(Mem{Base: p.m}, t)
		VMOVD(t, p.x)
		VCVTPH2PS(p.x, p.x)
		ADDQ(U8(2), p.m)
	}
	VMULSS(y, x, x)
	VCVTSS2SD(x, x, x)
	VADDSD(x, sum, sum)
	DECQ(rest)
	JNZ(LabelRef("tail"))
	Label("tailDone")
}

// zeroedZmm returns fresh zeroed zmm registers.
func zeroedZmm(n int) []VecVirtual {
	r := make([]VecVirtual, n)
	for i := range r {
		r[i] = ZMM()
		VPXORD(r[i], r[i], r[i])
	}
	return r
}
