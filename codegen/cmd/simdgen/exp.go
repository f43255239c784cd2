package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Kernels built on ggml's vectorised exponential (ggml_v_expf), operation
// for operation as ops/ref's expApprox models it, so the results are
// bit-identical to the pure-Go reference: every step is one IEEE
// operation with one rounding. The final j·2ⁿ is VSCALEFPS on AVX-512,
// then ggml's patch for |n| > 192. AVX2 has no VSCALEFPS; there j·2ⁿ is
// (j·2ᵗ)·2ⁿ⁻ᵗ with t = n moved by ±100 into the normal range when the
// result is not normal: j lies in [0.7, 1.5), so the first product is
// exact and the second rounds once, as VSCALEFPS does. Both work in groups
// of 16 floats, ggml's AVX-512 grouping, which decides the softmax sums.

// The constants live in memory once, eight lanes wide, so that AVX2 code
// can take them as full-width memory operands; AVX-512 code broadcasts
// the first lane.
var (
	cExpShift  = constF32("expShift", 0x1.8p23)
	cExpLog2e  = constF32("expLog2e", 0x1.715476p+0)
	cExpLn2Hi  = constF32("expLn2Hi", 0x1.62e4p-1)
	cExpLn2Lo  = constF32("expLn2Lo", 0x1.7f7d1cp-20)
	cExpC1     = constF32("expC1", 0x1.ffffecp-1)
	cExpC2     = constF32("expC2", 0x1.fffdb6p-2)
	cExpC3     = constF32("expC3", 0x1.555e66p-3)
	cExpC4     = constF32("expC4", 0x1.573e2ep-5)
	cExpC5     = constF32("expC5", 0x1.0e4020p-7)
	cExpOne    = constF32("expOne", 1)
	cExpBig    = constF32("expBig", 192)
	cExpNegBig = constF32("expNegBig", -192)
	cExpInf    = constF32("expInf", float32(math.Inf(1)))
	cExpMinN   = constF32("expMinN", -125) // below: j·2ⁿ is not normal
	cExpMaxN   = constF32("expMaxN", 127)  // above: j·2ⁿ may overflow
	cExpShiftN = constF32("expShiftN", 100)
	cExpNegN   = constF32("expNegShiftN", -100)
	cExpBias   = constVec("expBias", 127) // int32 exponent bias
)

// constF32 emits eight copies of v.
func constF32(name string, v float32) Mem { return constVec(name, math.Float32bits(v)) }

// constVec emits eight copies of a 32-bit pattern.
func constVec(name string, bits uint32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(bits))
	}
	return m
}

// expYMM returns exp(x) for the eight lanes of x (see above).
func expYMM(x VecVirtual) VecVirtual {
	n, b := expReduce(x, ymmConsts)
	j := expPoly(b, ymmConsts)
	// adj = +100 where n < −125, −100 where n > 127, else 0.
	lo, hi := YMM(), YMM()
	VCMPPS(U8(0x11), cExpMinN, n, lo) // n < −125
	VCMPPS(U8(0x1e), cExpMaxN, n, hi) // n > 127
	VANDPS(cExpShiftN, lo, lo)
	VANDPS(cExpNegN, hi, hi)
	adj := lo
	VORPS(hi, lo, adj)
	t := YMM()
	VADDPS(adj, n, t) // exact: small integers
	res := YMM()
	VMULPS(pow2(t), j, res) // exact
	negAdj := hi
	VXORPS(negAdj, negAdj, negAdj)
	VSUBPS(adj, negAdj, negAdj)
	VMULPS(pow2(negAdj), res, res) // the one rounding
	// ggml: +Inf above n = 192, 0 below −192 (NaN compares false: stays).
	over, under := YMM(), YMM()
	VCMPPS(U8(0x1e), cExpBig, n, over)
	VCMPPS(U8(0x11), cExpNegBig, n, under)
	VANDNPS(res, under, res)
	inf := YMM()
	VMOVUPS(cExpInf, inf)
	VBLENDVPS(over, inf, res, res)
	return res
}

// pow2 returns 2ᵏ for integral float lanes k in the normal exponent range.
func pow2(k VecVirtual) VecVirtual {
	p := YMM()
	VCVTPS2DQ(k, p)
	VPADDD(cExpBias, p, p)
	VPSLLD(U8(23), p, p)
	return p
}

// constOps applies the in-memory constants at one vector width: ymm code
// takes the eight-lane vectors as operands, zmm code broadcasts lane 0.
type constOps struct {
	vec                 func() VecVirtual
	load                func(c Mem, dst VecVirtual)
	fmadd, fnmadd, subr func(c Mem, x, acc VecVirtual)
}

var (
	ymmConsts = constOps{vec: YMM,
		load:   func(c Mem, dst VecVirtual) { VMOVUPS(c, dst) },
		fmadd:  func(c Mem, x, acc VecVirtual) { VFMADD231PS(c, x, acc) },
		fnmadd: func(c Mem, x, acc VecVirtual) { VFNMADD231PS(c, x, acc) },
		subr:   func(c Mem, x, dst VecVirtual) { VSUBPS(c, x, dst) }}
	zmmConsts = constOps{vec: ZMM,
		load:   func(c Mem, dst VecVirtual) { VBROADCASTSS(c, dst) },
		fmadd:  func(c Mem, x, acc VecVirtual) { VFMADD231PS_BCST(c, x, acc) },
		fnmadd: func(c Mem, x, acc VecVirtual) { VFNMADD231PS_BCST(c, x, acc) },
		subr:   func(c Mem, x, dst VecVirtual) { VSUBPS_BCST(c, x, dst) }}
)

// expReduce splits x as n·ln2 + b, n integral: n = (x·log2e + shift) −
// shift, b = x − n·ln2hi − n·ln2lo.
func expReduce(x VecVirtual, k constOps) (n, b VecVirtual) {
	z := k.vec()
	k.load(cExpShift, z)
	k.fmadd(cExpLog2e, x, z)
	n = k.vec()
	k.subr(cExpShift, z, n)
	b = k.vec()
	VMOVAPS(x, b)
	k.fnmadd(cExpLn2Hi, n, b)
	k.fnmadd(cExpLn2Lo, n, b)
	return n, b
}

// expPoly returns j = 1 + c1·b + (c2 + c3·b)·u + (c4 + c5·b)·u² with u = b²,
// evaluated as ggml does.
func expPoly(b VecVirtual, k constOps) VecVirtual {
	u := k.vec()
	VMULPS(b, b, u)
	p := k.vec()
	k.load(cExpC4, p)
	k.fmadd(cExpC5, b, p) // c5·b + c4
	q := k.vec()
	k.load(cExpC2, q)
	k.fmadd(cExpC3, b, q) // c3·b + c2
	VFMADD231PS(p, u, q)  // hi = p·u + q
	j := k.vec()
	k.load(cExpOne, j)
	k.fmadd(cExpC1, b, j) // c1·b + 1
	VFMADD231PS(q, u, j)  // hi·u + c1·b + 1
	return j
}

// expZMM returns exp(x) for the 16 lanes of x, exactly as ggml's AVX-512
// code: VSCALEFPS, then +Inf above n = 192 and 0 below −192 (NaN stays).
func expZMM(x VecVirtual) VecVirtual {
	n, b := expReduce(x, zmmConsts)
	j := expPoly(b, zmmConsts)
	res := ZMM()
	VSCALEFPS(n, j, res)
	over, under := K(), K()
	VCMPPS_BCST(U8(0x1e), cExpBig, n, over)     // n > 192
	VCMPPS_BCST(U8(0x11), cExpNegBig, n, under) // n < −192
	VBROADCASTSS(cExpInf, over, res)
	VXORPS(res, res, under, res)
	return res
}

// expGroup computes exp of one group of 16 floats, given as the registers
// of one variant.
func expGroup(v variant, xs []VecVirtual) []VecVirtual {
	if v.vnni {
		return []VecVirtual{expZMM(xs[0])}
	}
	return []VecVirtual{expYMM(xs[0]), expYMM(xs[1])}
}

// loadGroup loads 16 floats at p into one zmm or two ymm.
func loadGroup(v variant, p Register) []VecVirtual {
	if v.vnni {
		z := ZMM()
		VMOVUPS(Mem{Base: p}, z)
		return []VecVirtual{z}
	}
	a, b := YMM(), YMM()
	VMOVUPS(Mem{Base: p}, a)
	VMOVUPS(Mem{Base: p, Disp: 32}, b)
	return []VecVirtual{a, b}
}

func storeGroup(xs []VecVirtual, p Register) {
	for i, x := range xs {
		VMOVUPS(x, Mem{Base: p, Disp: 32 * i})
	}
}

func genExpKernels(v variant, reg *registry) {
	reg.elem(v, genSiLU(v), genSoftmaxExp(v))
}

// genSiLU emits silu(ng int, x, dst *float32): dst = x/(1+exp(0−x)) as
// ggml_v_silu, for ng groups of 16.
func genSiLU(v variant) string {
	name := fname("silu", v)
	TEXT(name, NOSPLIT, "func(ng int, x *float32, dst *float32)")
	Doc(name+" sets dst[i] = x[i]/(1+exp(−x[i])) for ng groups of 16 floats,",
		"bit-identical to ops/ref.SiLU on whole groups.")
	ng := Load(Param("ng"), GP64())
	x := Load(Param("x"), GP64())
	dst := Load(Param("dst"), GP64())
	loopBlocks(ng, func() {
		xs := loadGroup(v, x)
		negs := make([]VecVirtual, len(xs))
		for i, xv := range xs {
			negs[i] = sameSize(xv)
			VXORPS(negs[i], negs[i], negs[i])
			VSUBPS(xv, negs[i], negs[i]) // 0 − x, as ggml
		}
		es := expGroup(v, negs)
		for i, e := range es {
			if v.vnni {
				VADDPS_BCST(cExpOne, e, e)
			} else {
				VADDPS(cExpOne, e, e)
			}
			VDIVPS(e, xs[i], xs[i])
		}
		storeGroup(xs, dst)
		ADDQ(U32(64), x)
		ADDQ(U32(64), dst)
	})
	VZEROUPPER()
	RET()
	return name
}

// genSoftmaxExp emits softmaxExp(ng int, row *float32, maxv float32)
// float64: row[i] = exp(row[i] − maxv) for ng groups of 16, returning the
// float64 sum of the groups' float32 sums (each folded 8, 4, 2, 1 as
// _mm512_reduce_add_ps), as ops/ref does.
func genSoftmaxExp(v variant) string {
	name := fname("softmaxExp", v)
	TEXT(name, NOSPLIT, "func(ng int, row *float32, maxv float32) float64")
	Doc(name+" replaces ng groups of 16 floats x at row with exp(x − maxv) and returns",
		"the float64 sum of the groups' float32 sums, as ops/ref does.")
	ng := Load(Param("ng"), GP64())
	row := Load(Param("row"), GP64())
	var m VecVirtual
	if v.vnni {
		m = ZMM()
	} else {
		m = YMM()
	}
	VBROADCASTSS(Load(Param("maxv"), XMM()), m)
	sum := XMM()
	VXORPD(sum, sum, sum)
	loopBlocks(ng, func() {
		xs := loadGroup(v, row)
		for _, xv := range xs {
			VSUBPS(m, xv, xv)
		}
		es := expGroup(v, xs)
		storeGroup(es, row)
		var s VecVirtual
		if v.vnni {
			s = reduceAddZMM(es[0])
		} else {
			h := YMM()
			VADDPS(es[1], es[0], h) // lanes i + i+8
			s = hsum(h)
		}
		VCVTSS2SD(s, s, s)
		VADDSD(s, sum, sum)
		ADDQ(U32(64), row)
	})
	Store(sum, ReturnIndex(0))
	VZEROUPPER()
	RET()
	return name
}

// sameSize returns a fresh register of x's width.
func sameSize(x VecVirtual) VecVirtual {
	if x.Size() == 64 {
		return ZMM()
	}
	return YMM()
}

// reduceAddZMM sums the 16 lanes of v into lane 0 of the result in the
// order of _mm512_reduce_add_ps: i + i+8, then + i+4, + i+2, + i+1. It uses
// EVEX forms only, as v may live in a register above 15.
func reduceAddZMM(v VecVirtual) VecVirtual {
	h := YMM()
	VEXTRACTF64X4(U8(1), v, h)
	VADDPS(v.AsY(), h, h)
	q := XMM()
	VEXTRACTF32X4(U8(1), h, q)
	VADDPS(h.AsX(), q, q)
	return foldXMM(q, addPS, addSS)
}
