package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Float32 dot products in the two orders of llama.cpp's AVX-512 build
// (c392e5094), which its attention over an f32 KV cache takes (see
// ops/ref/dot.go, whose VecDotF32 and TinyDotF32 these equal bit for bit):
//
//   - dotF32Vec is ggml_vec_dot_f32: four 16-lane accumulators of fused
//     multiply-adds over whole blocks of 64 values (accumulator k takes
//     values 16k…16k+15 of each block), folded as GGML_F32_VEC_REDUCE
//     ((0+2)+(1+3)), reduced as _mm512_reduce_add_ps, and then the tail's
//     products, each rounded to float32 (VMULSS), added one at a time.
//   - dotF32Tiny is llamafile's tinyBLAS: one 16-lane accumulator over
//     chunks of 16, reduced as _mm512_reduce_add_ps; n a multiple of 16.
//
// _mm512_reduce_add_ps (GCC's) adds lane i to lane i+8, then i to i+4,
// then i to i+2, then lane 0 to lane 1. The AVX2 variants keep each
// 16-lane accumulator in two ymm (lanes 0–7 and 8–15), which adds the
// same pairs in the same order: the same bits.
//
// Both take several rows of b at once, stride bytes apart (rows of the K
// cache for Q·Kᵀ, rows of the transposed V cache for P·V), sharing each
// load of a, and store dst[r]. A group of rows at a time gives the
// out-of-order core independent accumulation chains; the rows left over
// go one at a time.

const f32Sig = "func(n int, a *float32, b *float32, stride int, rows int, dst *float32)"

// f32Rows addresses the rows of a group: row r is base[r/4] + (r%4)·stride
// (row 3 through stride3 = 3·stride), so eight rows need four registers.
type f32Rows struct {
	base            []Register
	stride, stride3 Register
}

func (s f32Rows) at(r, disp int) Mem {
	m := Mem{Base: s.base[r/4], Disp: disp}
	switch r % 4 {
	case 1, 2:
		m.Index, m.Scale = s.stride, uint8(r%4)
	case 3:
		m.Index, m.Scale = s.stride3, 1
	}
	return m
}

// advance moves every base (and a) on by k bytes.
func (s f32Rows) advance(a Register, k int) {
	ADDQ(U32(k), a)
	for _, b := range s.base {
		ADDQ(U32(k), b)
	}
}

// f32Kernel is what differs between the two orders and the variants.
type f32Kernel struct {
	v     variant
	tiny  bool
	group int // rows per pass of the group loop
}

// regs is the number of vector registers (zmm, or ymm for AVX2) making
// up one 16-lane accumulator.
func (k f32Kernel) regs() int {
	if k.v.vnni {
		return 1
	}
	return 2
}

func (k f32Kernel) vec() VecVirtual {
	if k.v.vnni {
		return ZMM()
	}
	return YMM()
}

// accsPerRow is the number of 16-lane accumulators of one row.
func (k f32Kernel) accsPerRow() int {
	if k.tiny {
		return 1
	}
	return 4
}

func genDotF32(v variant, reg *registry) {
	// AVX-512: 4 rows × 4 zmm (vec) or 8 rows × 1 zmm (tiny) accumulators;
	// AVX2 keeps to 16 ymm: 1 row × 8 ymm, or 4 rows × 2 ymm.
	vecGroup, tinyGroup := 1, 4
	if v.vnni {
		vecGroup, tinyGroup = 4, 8
	}
	vec := genDotF32Kernel(f32Kernel{v: v, group: vecGroup}, "dotF32Vec",
		"in ggml_vec_dot_f32's order (ops/ref.VecDotF32)")
	tiny := genDotF32Kernel(f32Kernel{v: v, tiny: true, group: tinyGroup}, "dotF32Tiny",
		"in tinyBLAS's order (ops/ref.TinyDotF32); n a multiple of 16")
	reg.f32Dots(v, vec, tiny)
}

func genDotF32Kernel(k f32Kernel, base, order string) string {
	name := fname(base, k.v)
	TEXT(name, NOSPLIT, f32Sig)
	Doc(name+" sets dst[r] to the dot product of the n floats at a with those at",
		"b + r·stride bytes for r < rows, "+order+".")
	n := Load(Param("n"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	stride := Load(Param("stride"), GP64())
	rows := Load(Param("rows"), GP64())
	dst := Load(Param("dst"), GP64())
	stride3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, stride3)
	count := GP64()
	if k.group > 1 {
		MOVQ(rows, count)
		SHRQ(U8(log2(k.group)), count)
		JZ(LabelRef("singles"))
		Label("groups")
		k.pass(k.group, "g", n, a, b, dst, f32Rows{stride: stride, stride3: stride3})
		DECQ(count)
		JNZ(LabelRef("groups"))
		Label("singles")
		ANDQ(U32(k.group-1), rows)
	}
	MOVQ(rows, count)
	TESTQ(count, count)
	JZ(LabelRef("ret"))
	Label("single")
	k.pass(1, "s", n, a, b, dst, f32Rows{stride: stride, stride3: stride3})
	DECQ(count)
	JNZ(LabelRef("single"))
	Label("ret")
	VZEROUPPER()
	RET()
	return name
}

func log2(x int) int {
	l := 0
	for ; x > 1; x >>= 1 {
		l++
	}
	return l
}

// pass computes rows dot products of a with the rows at b, stores them at
// dst, and moves b on by rows·stride and dst by rows floats.
func (k f32Kernel) pass(rows int, l string, n, a, b, dst Register, rs f32Rows) {
	pa := GP64()
	MOVQ(a, pa)
	rs.base = []Register{GP64()}
	MOVQ(b, rs.base[0])
	if rows > 4 {
		rs.base = append(rs.base, GP64())
		LEAQ(Mem{Base: b, Index: rs.stride, Scale: 4}, rs.base[1])
	}
	lanes := 16 * k.accsPerRow() // values per step of the main loop
	cnt := GP64()
	MOVQ(n, cnt)
	SHRQ(U8(log2(lanes)), cnt)
	// acc[r][i]: accumulator i/regs() of row r, its part i%regs().
	acc := make([][]VecVirtual, rows)
	for r := range acc {
		acc[r] = make([]VecVirtual, k.accsPerRow()*k.regs())
		for i := range acc[r] {
			acc[r][i] = k.vec()
			pxor(k.v, acc[r][i], acc[r][i], acc[r][i])
		}
	}
	width := 64 / k.regs() // bytes per vector register
	TESTQ(cnt, cnt)
	JZ(LabelRef(l + "blocksDone"))
	Label(l + "blocks")
	for i := range acc[0] {
		x := k.vec()
		VMOVUPS(Mem{Base: pa, Disp: width * i}, x)
		for r := range acc {
			VFMADD231PS(rs.at(r, width*i), x, acc[r][i])
		}
	}
	rs.advance(pa, 4*lanes)
	DECQ(cnt)
	JNZ(LabelRef(l + "blocks"))
	Label(l + "blocksDone")
	sums := make([]VecVirtual, rows)
	for r := range acc {
		sums[r] = k.reduce(acc[r])
	}
	if !k.tiny {
		k.tail(l, n, pa, rs, sums)
	}
	for r, s := range sums {
		VMOVSS(s, Mem{Base: dst, Disp: 4 * r})
	}
	ADDQ(U32(4*rows), dst)
	if rows == 1 {
		ADDQ(rs.stride, b)
	} else {
		LEAQ(Mem{Base: b, Index: rs.stride, Scale: uint8(rows)}, b)
	}
}

// tail adds to each row's sum the products of the last n mod 64 values,
// each rounded to float32, in turn: ggml_vec_dot_f32's leftovers.
func (k f32Kernel) tail(l string, n, pa Register, rs f32Rows, sums []VecVirtual) {
	cnt := GP64()
	MOVQ(n, cnt)
	ANDQ(U32(63), cnt)
	JZ(LabelRef(l + "tailDone"))
	Label(l + "tail")
	x := XMM()
	VMOVSS(Mem{Base: pa}, x)
	for r, s := range sums {
		p := XMM()
		VMULSS(rs.at(r, 0), x, p)
		VADDSS(p, s, s)
	}
	rs.advance(pa, 4)
	DECQ(cnt)
	JNZ(LabelRef(l + "tail"))
	Label(l + "tailDone")
}

// reduce folds one row's accumulators (GGML_F32_VEC_REDUCE for four) and
// sums the 16 lanes as _mm512_reduce_add_ps; the result is in lane 0.
func (k f32Kernel) reduce(acc []VecVirtual) VecVirtual {
	n := k.regs()
	if len(acc) == 4*n { // (0+2)+(1+3), each part alike
		for i := range n {
			VADDPS(acc[2*n+i], acc[i], acc[i])
			VADDPS(acc[3*n+i], acc[n+i], acc[n+i])
			VADDPS(acc[n+i], acc[i], acc[i])
		}
	}
	var y VecVirtual // lane i + lane i+8
	if k.v.vnni {
		y = foldZmm(acc[0])
	} else {
		y = acc[0]
		VADDPS(acc[1], y, y)
	}
	x := XMM() // lane i + lane i+4
	if k.v.vnni {
		VEXTRACTF32X4(U8(1), y, x) // EVEX: y may be Y16–Y31
	} else {
		VEXTRACTF128(U8(1), y, x)
	}
	VADDPS(y.AsX(), x, x)
	return foldXMM(x, addPS, addSS)
}
