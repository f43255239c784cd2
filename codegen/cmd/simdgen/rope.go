package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// RoPE's rotation of one token's heads, ops/ref.RoPE.Rotate's arithmetic
// (llama.cpp's compiled code): the first output of a pair is
// fma(x0, c, −(x1·s)), the second fma(x0, s, x1·c), the inner product
// rounded to float32 first. Negation is exact, so x0·c − round(x1·s) by a
// fused multiply-subtract has those bits.
//
// Adjacent pairs (llama): a vector holds lanes/2 pairs (x0, x1) and the
// table the matching (cos, sin) pairs. With A = (x0, x0), B = (x1, x1)
// and the table's pairs swapped to (sin, cos), VFMADDSUB231PS gives
// A·(c, s) ∓ B·(s, c): even lanes subtract, odd lanes add.
//
// NeoX pairs (x[i], x[i+half]): the table holds all cosines, then all
// sines; lanes pairs a step with plain multiply-subtract and multiply-add.

// genRoPEKernels emits both rotations for chunks of lanes floats.
func genRoPEKernels(v variant, reg *registry) {
	pairs, neox := genRoPEPairs(v), genRoPENeoX(v)
	reg.update(v, func(e *elemEntry) { e.ropePairs, e.ropeNeoX = pairs, neox })
}

// ropeLoop runs body for every chunk c < nc (outer) and head h < nh
// (inner) with p pointing at chunk c of head h (x + h·stride + c·step);
// before the heads of a chunk it calls chunk (tables loads).
func ropeLoop(nh, x, stride, nc Register, step int, chunk func(), body func(p Register)) {
	TESTQ(nc, nc)
	JZ(LabelRef("done"))
	TESTQ(nh, nh)
	JZ(LabelRef("done"))
	Label("chunks")
	chunk()
	p, h := GP64(), GP64()
	MOVQ(x, p)
	MOVQ(nh, h)
	Label("heads")
	body(p)
	ADDQ(stride, p)
	DECQ(h)
	JNZ(LabelRef("heads"))
	ADDQ(U32(step), x)
	DECQ(nc)
	JNZ(LabelRef("chunks"))
	Label("done")
}

func genRoPEPairs(v variant) string {
	lanes, vec := v.lanes(), v.vec
	name := fname("ropePairs", v)
	TEXT(name, NOSPLIT, "func(nh int, x *float32, stride int, nc int, cs *float32)")
	Doc(name+fmt.Sprintf(" rotates adjacent pairs of nh heads (stride bytes apart at x), nc chunks of %d floats", lanes),
		"each, by the (cos, sin) pairs at cs: ops/ref.RoPE.Rotate's bits.")
	nh := Load(Param("nh"), GP64())
	x := Load(Param("x"), GP64())
	stride := Load(Param("stride"), GP64())
	nc := Load(Param("nc"), GP64())
	cs := Load(Param("cs"), GP64())
	tab, swapped := vec(), vec()
	ropeLoop(nh, x, stride, nc, 4*lanes, func() {
		VMOVUPS(Mem{Base: cs}, tab)
		VPERMILPS(U8(0xb1), tab, swapped) // (sin, cos) pairs
		ADDQ(U32(4*lanes), cs)
	}, func(p Register) {
		in, a, b := vec(), vec(), vec()
		VMOVUPS(Mem{Base: p}, in)
		VMOVSLDUP(in, a) // (x0, x0)
		VMOVSHDUP(in, b) // (x1, x1)
		VMULPS(swapped, b, b)
		VFMADDSUB231PS(tab, a, b) // even: x0·c − x1·s; odd: x0·s + x1·c
		VMOVUPS(b, Mem{Base: p})
	})
	VZEROUPPER()
	RET()
	return name
}

func genRoPENeoX(v variant) string {
	lanes, vec := v.lanes(), v.vec
	name := fname("ropeNeoX", v)
	TEXT(name, NOSPLIT, "func(nh int, x *float32, stride int, nc int, half int, cs *float32)")
	Doc(name+fmt.Sprintf(" rotates the pairs (x[i], x[i+half bytes]) of nh heads (stride bytes apart at x), nc chunks of %d pairs", lanes),
		"each, by the cosines at cs and the sines half bytes after them: ops/ref.RoPE.Rotate's bits.")
	nh := Load(Param("nh"), GP64())
	x := Load(Param("x"), GP64())
	stride := Load(Param("stride"), GP64())
	nc := Load(Param("nc"), GP64())
	half := Load(Param("half"), GP64())
	cs := Load(Param("cs"), GP64())
	c, s := vec(), vec()
	ropeLoop(nh, x, stride, nc, 4*lanes, func() {
		VMOVUPS(Mem{Base: cs}, c)
		VMOVUPS(Mem{Base: cs, Index: half, Scale: 1}, s)
		ADDQ(U32(4*lanes), cs)
	}, func(p Register) {
		lo, hi, first, second := vec(), vec(), vec(), vec()
		VMOVUPS(Mem{Base: p}, lo)
		VMOVUPS(Mem{Base: p, Index: half, Scale: 1}, hi)
		VMULPS(s, hi, first)
		VMULPS(c, hi, second)
		VFMSUB231PS(c, lo, first)  // x0·c − x1·s
		VFMADD231PS(s, lo, second) // x0·s + x1·c
		VMOVUPS(first, Mem{Base: p})
		VMOVUPS(second, Mem{Base: p, Index: half, Scale: 1})
	})
	VZEROUPPER()
	RET()
	return name
}
