package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// variant is one instruction-set level the kernels are generated for.
type variant struct {
	name   string // as reported by simd.Variant()
	suffix string // appended to every function name
	vnni   bool   // AVX-512 VNNI (VPDPBUSD on ymm) instead of VPMADDUBSW+VPMADDWD
}

// lanes is the float32 lanes of the variant's element-wise vectors: ymm
// for AVX2, zmm for AVX-512.
func (v variant) lanes() int {
	if v.vnni {
		return 16
	}
	return 8
}

// vec allocates one of the variant's element-wise vectors.
func (v variant) vec() VecVirtual {
	if v.vnni {
		return ZMM()
	}
	return YMM()
}

var variants = []variant{
	{name: "avx2", suffix: "AVX2"},
	{name: "avx512vnni", suffix: "AVX512", vnni: true},
}

// rowsPerCall is how many weight rows the multi-row kernels take at once.
const rowsPerCall = 4

// Constants shared by the kernels, broadcast from memory where used.
var (
	cLowNibble = ConstData("lowNibble", U8(0x0f))
	cEight     = ConstData("eightBytes", U8(8))
	cOnes16    = ConstData("onesWord", U16(1))
	cAbsMask   = ConstData("absMask", U32(0x7fffffff))
	cSignMask  = ConstData("signMask", U32(0x80000000))
	cHalfDown  = ConstData("halfDown", U32(0x3effffff)) // largest float below 0.5
	c127       = ConstData("f127", F32(127))
	cOne       = ConstData("f1", F32(1))
	cPackOrder = packOrder()
)

// packOrder is the VPERMD index that undoes the lane interleaving of
// VPACKSSDW + VPACKSSWB on four ymm registers of int32.
func packOrder() Mem {
	m := GLOBL("packOrder", RODATA|NOPTR)
	for i, v := range []uint32{0, 4, 1, 5, 2, 6, 3, 7} {
		DATA(4*i, U32(v))
	}
	return m
}

func fname(base string, v variant) string { return fmt.Sprintf("%s%s", base, v.suffix) }

// broadcastF16 loads the binary16 at m into all eight lanes of a ymm as float32.
func broadcastF16(m Mem) VecVirtual {
	h := XMM()
	VPBROADCASTW(m, h)
	y := YMM()
	VCVTPH2PS(h, y)
	return y
}

// broadcastByte fills a ymm with the byte at m.
func broadcastByte(m Mem) VecVirtual {
	y := YMM()
	VPBROADCASTB(m, y)
	return y
}

// hsum adds the eight float32 lanes of acc and returns them in lane 0.
func hsum(acc VecVirtual) VecVirtual {
	hi := XMM()
	VEXTRACTF128(U8(1), acc, hi)
	VADDPS(acc.AsX(), hi, hi)
	return foldXMM(hi, addPS, addSS)
}

// foldXMM combines the four float32 lanes of x into lane 0 with op:
// lanes i and i+2, then the two results (opSS), the last steps of
// _mm512_reduce_add_ps and its kin. EVEX-safe: x may be X16–X31.
func foldXMM(x VecVirtual, op, opSS func(a, b, dst Op)) VecVirtual {
	t := XMM()
	VMOVHLPS(x, x, t)
	op(t, x, x)
	VMOVSHDUP(x, t)
	opSS(t, x, x)
	return x
}

// The operations foldXMM takes.
func addPS(a, b, dst Op) { VADDPS(a, b, dst) }
func addSS(a, b, dst Op) { VADDSS(a, b, dst) }
func maxPS(a, b, dst Op) { VMAXPS(a, b, dst) }
func maxSS(a, b, dst Op) { VMAXSS(a, b, dst) }

// zeroed returns fresh zeroed ymm registers.
func zeroed(n int) []VecVirtual {
	r := make([]VecVirtual, n)
	for i := range r {
		r[i] = YMM()
		VXORPS(r[i], r[i], r[i])
	}
	return r
}

// loopBlocks emits `for nb > 0 { body(); nb-- }`.
func loopBlocks(nb Register, body func()) {
	TESTQ(nb, nb)
	JZ(LabelRef("done"))
	Label("loop")
	body()
	DECQ(nb)
	JNZ(LabelRef("loop"))
	Label("done")
}

// rowPointers returns rowsPerCall base registers w, w+stride, w+2·stride, ….
func rowPointers() []Register {
	rows := make([]Register, rowsPerCall)
	rows[0] = Load(Param("w"), GP64())
	stride := Load(Param("stride"), GP64())
	for r := 1; r < rowsPerCall; r++ {
		rows[r] = GP64()
		LEAQ(Mem{Base: rows[r-1], Index: stride, Scale: 1}, rows[r])
	}
	return rows
}

// storeSums writes the horizontal sum of each accumulator to dst[r].
func storeSums(accs []VecVirtual) {
	dst := Load(Param("dst"), GP64())
	for r, acc := range accs {
		VMOVSS(hsum(acc), Mem{Base: dst, Disp: 4 * r})
	}
	VZEROUPPER()
	RET()
}

// finishDot returns the horizontal sum of acc.
func finishDot(acc VecVirtual) {
	s := hsum(acc)
	VZEROUPPER()
	Store(s, ReturnIndex(0))
	RET()
}
