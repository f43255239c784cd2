package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Decode kernels for F16 and BF16 weights (AVX-512): one token against
// many rows that stream from memory, each row summed in exactly the order
// of the dot kernels (dot_f16_zmm.go, and ggml_vec_dot_bf16's AVX512-BF16
// path), for lengths that are whole 64-value blocks. They differ from a
// loop over the dot kernel only in how they feed it:
//
//   - the row loop is inside the kernel, and each block of a row first
//     prefetches the same two cache lines of the row decodeAhead rows on
//     (the next one). A row of a decode matmul is a few KiB, so every row
//     starts a new page, where the hardware prefetcher stops and starts
//     again; reading the rows ahead keeps the memory busy across those
//     boundaries (measured: BenchmarkDecodeStream);
//   - F16 takes its activation already widened to float32 (the FMAs read
//     it from memory), so the loop converts only the weights: the same
//     values, half the conversions;
//   - BF16 sums each 32-value chunk with one VDPBF16PS, as llama.cpp's
//     AVX512-BF16 build does, instead of two FMAs and the widening; the
//     bits are the dot kernel's except where VDPBF16PS flushes denormals
//     (see genGemmBF16DP), as llama.cpp's own do. Only CPUs with
//     AVX512_BF16 take it (simd.hasBF16DP).
//
// Signature: func(nb int, w *byte, stride int, a *byte, nRows int, dst
// *float32): nb 64-value blocks of nRows rows stride bytes apart, the
// sums to dst[0…nRows-1].

// decodeAhead is how many rows ahead the kernels prefetch. Measured on an
// AVX-512 Xeon (BenchmarkDecodeStream, 2048-value rows, two threads): F16
// 17.4 GB/s without the prefetch, 22.2 with the next row, 19.6 four rows
// ahead; BF16 18.9, 25.5, 20.8.
const decodeAhead = 1

const decodeSig = "func(nb int, w *byte, stride int, a *byte, nRows int, dst *float32)"

func genDecodeFloat(v variant, reg *registry) {
	if !v.vnni {
		return
	}
	reg.decodeFloat(v, genDecodeF16(v), genDecodeBF16(v))
}

// decodeLoop emits the row loop and, inside it, the block loop around
// block(wp, ap): wp and ap address the row's and the activation's current
// block; ap advances by aBlock bytes a block. finish(dst) reduces the
// row's accumulators and stores its sum at dst.
func decodeLoop(name string, aBlock int, start func(), block func(wp, ap Register), finish func(dst Mem)) {
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	stride := Load(Param("stride"), GP64())
	a := Load(Param("a"), GP64())
	rows := Load(Param("nRows"), GP64())
	dst := Load(Param("dst"), GP64())
	ahead := GP64()
	IMUL3Q(U8(decodeAhead), stride, ahead)
	TESTQ(rows, rows)
	JZ(LabelRef(name + "_done"))
	Label(name + "_row")
	start()
	wp, ap, k := GP64(), GP64(), GP64()
	MOVQ(w, wp)
	MOVQ(a, ap)
	MOVQ(nb, k)
	TESTQ(k, k)
	JZ(LabelRef(name + "_sum"))
	Label(name + "_block")
	PREFETCHT0(Mem{Base: wp, Index: ahead, Scale: 1})
	PREFETCHT0(Mem{Base: wp, Index: ahead, Scale: 1, Disp: 64})
	block(wp, ap)
	ADDQ(U32(128), wp)
	ADDQ(U32(aBlock), ap)
	DECQ(k)
	JNZ(LabelRef(name + "_block"))
	Label(name + "_sum")
	finish(Mem{Base: dst})
	ADDQ(U8(4), dst)
	ADDQ(stride, w)
	DECQ(rows)
	JNZ(LabelRef(name + "_row"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// genDecodeF16 sums as dotF16 does: four accumulators over 64-value
// blocks, folded (0+2)+(1+3), reduced as _mm512_reduce_add_ps. Without a
// tail the float64 steps of the dot change nothing.
func genDecodeF16(v variant) string {
	name := fname("decodeF16", v)
	TEXT(name, NOSPLIT, decodeSig)
	Doc(name+" stores in dst[r] the dot products of nRows rows of nb·64 binary16",
		"values (stride bytes apart) with the float32 activation a, each in",
		"ggml_vec_dot_f16's AVX-512 order, prefetching rows ahead.")
	var accs []VecVirtual
	decodeLoop(name, 256, func() {
		accs = zeroedZmm(4)
	}, func(wp, ap Register) {
		for i, acc := range accs {
			x := ZMM()
			VCVTPH2PS(Mem{Base: wp, Disp: 32 * i}, x)
			VFMADD231PS(Mem{Base: ap, Disp: 64 * i}, x, acc)
		}
	}, func(dst Mem) {
		VADDPS(accs[2], accs[0], accs[0])
		VADDPS(accs[3], accs[1], accs[1])
		VADDPS(accs[1], accs[0], accs[0])
		VMOVSS(hsum(foldZmm(accs[0])), dst)
	})
	return name
}

// genDecodeBF16 sums as ggml_vec_dot_bf16's AVX512-BF16 path: two
// accumulators (values 0–31 and 32–63 of each block) by VDPBF16PS, each
// reduced as _mm512_reduce_add_ps and the two added in float64.
func genDecodeBF16(v variant) string {
	name := fname("decodeBF16", v)
	TEXT(name, NOSPLIT, decodeSig)
	Doc(name+" stores in dst[r] the dot products of nRows rows of nb·64 bfloat16",
		"values (stride bytes apart) with the bfloat16 activation a, each in",
		"ggml_vec_dot_bf16's AVX512-BF16 order by VDPBF16PS (needs AVX512_BF16),",
		"prefetching rows ahead.")
	var accs []VecVirtual
	decodeLoop(name, 128, func() {
		accs = zeroedZmm(2)
	}, func(wp, ap Register) {
		for i, acc := range accs {
			x, y := ZMM(), ZMM()
			VMOVDQU32(Mem{Base: wp, Disp: 64 * i}, x)
			VMOVDQU32(Mem{Base: ap, Disp: 64 * i}, y)
			vdpbf16ps(y, x, acc)
		}
	}, func(dst Mem) {
		s0, s1 := hsum(foldZmm(accs[0])), hsum(foldZmm(accs[1]))
		VCVTSS2SD(s0, s0, s0)
		VCVTSS2SD(s1, s1, s1)
		VADDSD(s1, s0, s0)
		VCVTSD2SS(s0, s0, s0)
		VMOVSS(s0, dst)
	})
	return name
}
