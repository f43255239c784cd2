package simd

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// flashBlock is ggml's vector step in ggml_vec_mad_*: 64 values; the
// elements past the last whole block are its unfused scalar tail.
const flashBlock = 64

// FlashMadF16 is ref.FlashMad(acc, x, vs, true) with x in binary16 bits
// (len(acc) values at x): the generated kernel over ggml's whole vector
// blocks, ref.FlashMad for the tail (or everything, without a kernel).
// tmp holds len(acc) floats of scratch.
func FlashMadF16(acc []float32, x []byte, vs float32, tmp []float32) {
	done := 0
	if np := len(acc) &^ (flashBlock - 1); active.flashF16 != nil && np > 0 {
		active.flashF16(np/active.lanes, &acc[0], &x[:2*np][0], vs)
		done = np
	}
	if done == len(acc) {
		return
	}
	rest := tmp[:len(acc)-done]
	quant.FP16ToFP32Row(x[2*done:], rest)
	ref.FlashMad(acc[done:], rest, vs, true)
}

// FlashMadF32 is ref.FlashMad(acc, x, vs, false) on the generated kernel
// over whole vector blocks.
func FlashMadF32(acc, x []float32, vs float32) {
	done := 0
	if np := len(acc) &^ (flashBlock - 1); active.flashF32 != nil && np > 0 {
		active.flashF32(np/active.lanes, &acc[0], &x[:np][0], vs)
		done = np
	}
	if done < len(acc) {
		ref.FlashMad(acc[done:], x[done:len(acc)], vs, false)
	}
}

// flashTile is a generated tile kernel (codegen flash_tile.go): n cells'
// updates of a block of 4 vectors of columns of several heads'
// accumulators (accStride bytes apart) and running sums, from V rows
// vStride bytes apart and signed weights eStride bytes apart per head.
type flashTile = func(n int, acc *float32, accStride int, v *byte, vStride int, e *float32, eStride int, sum *float32)

// flashExpGroups is the most groups of 16 one flashExp call takes (its
// result has one bit per group).
const flashExpGroups = 64

// FlashExp computes the tiled flash path's signed cell weights: dst[i] =
// float32(math.Exp(float64(−|x[i]|))) (ops/ref's expf, bit for bit) with
// the sign of x[i]. The caller encodes in that sign whether a cell raised
// the running maximum (see FlashUpdate), so one array carries both. The
// generated kernel computes in double precision and flags the groups of
// 16 with a lane it cannot vouch for (near a float32 rounding boundary,
// or |x| outside [0, 87]); those groups and the tail take the scalar
// function. x and dst must not overlap.
func FlashExp(x, dst []float32) {
	dst = dst[:len(x)]
	done := 0
	if k := active.flashExp; k != nil {
		for done+16 <= len(x) {
			ng := min(flashExpGroups, (len(x)-done)/16)
			bad := k(ng, &x[done], &dst[done])
			for bad != 0 {
				g := done + 16*bits.TrailingZeros64(bad)
				bad &= bad - 1
				scalarExp(x[g:g+16], dst[g:])
			}
			done += 16 * ng
		}
	}
	scalarExp(x[done:], dst[done:])
}

// scalarExp is FlashExp in Go.
func scalarExp(x, dst []float32) {
	for i, v := range x {
		sign := math.Float32bits(v) & (1 << 31)
		e := float32(math.Exp(-math.Abs(float64(v))))
		dst[i] = math.Float32frombits(math.Float32bits(e) | sign)
	}
}

// FlashUpdate applies n cells' online-softmax updates to the
// accumulators and running sums of len(sum) heads of hd values (head h's
// accumulator is acc[h·hd:(h+1)·hd]): ops/ref's flash loop after the
// exponentials. Cell j's weight for head h is e[h·eStride+j], signed as
// FlashExp leaves it: positive, the cell raised the maximum, and
// (ms, vs) = (e, 1); otherwise (ms, vs) = (1, −e). Then, as ref: with a
// raise, ref.FlashScale(acc, ms) and sum·ms; ref.FlashMad(acc, V_j, vs)
// and sum + vs, V_j the head's values of V row j, stored as t (F16, Q8_0
// or Q4_0; or F32: rows of one of them widened exactly, FlashWidenF16) at
// v[j·vStride:]. Every head reads the same V rows (the query heads of one
// KV head). halfAcc keeps a binary16 accumulator, as ggml does with a
// binary16 V (t F16, or F32 holding widened binary16 values); otherwise
// it is float32, as ggml's with a quantized V (and ref.AttnOptions.F32Acc
// with a binary16 one). ggml's whole 64-value blocks go to the generated
// kernels, several heads and cells per call with the accumulators in
// registers; the tail, and everything without a kernel, to the
// reference's functions. tmp holds hd floats.
func FlashUpdate(t gguf.TensorType, halfAcc bool, acc []float32, hd int, v []byte, vStride, n int, e []float32, eStride int, sum, tmp []float32) {
	nh := len(sum)
	if n <= 0 || nh == 0 {
		return
	}
	rb, _ := t.RowBytes(uint64(hd))
	_ = v[(n-1)*vStride+int(rb)-1]
	_ = acc[nh*hd-1]
	_ = e[(nh-1)*eStride+n-1]
	done, half := 0, halfAcc && (t == gguf.TypeF16 || t == gguf.TypeF32)
	if tiles := active.flashTiles[flashKind(t, half)]; len(tiles) > 0 {
		cols := 4 * active.lanes
		blk, _ := t.RowBytes(uint64(cols))
		fused := hd &^ (flashBlock - 1)
		for h0 := 0; h0 < nh; {
			k := min(len(tiles), nh-h0)
			for c := 0; c+cols <= fused; c += cols {
				s := &sum[h0]
				if c > 0 {
					s = &tmp[0] // the sums are done: discard the repeats
				}
				tiles[k-1](n, &acc[h0*hd+c], 4*hd, &v[c/cols*int(blk)], vStride, &e[h0*eStride], 4*eStride, s)
			}
			h0 += k
		}
		done = fused
		done = flashTail(t, half, acc, hd, done, v, vStride, n, e, eStride, sum, tmp)
	}
	for h := range nh {
		flashRest(t, half, acc[h*hd:(h+1)*hd], done, v, vStride, e[h*eStride:h*eStride+n], &sum[h], done == 0, tmp)
	}
}

// FlashWidenF16 widens n binary16 V rows of hd values, vStride bytes
// apart, into dst (row j at dst[j·hd:]), exactly, for FlashUpdate's F32
// kinds: a tile's rows converted once and read by many heads, instead of
// converted again in each kernel call. It returns false, doing nothing,
// where the CPU has no vector kernel for it or hd is not whole vectors of
// 16: the caller then passes the binary16 rows as they are.
func FlashWidenF16(v []byte, vStride, n, hd int, dst []float32) bool {
	w := active.flashWiden
	if w == nil || hd%16 != 0 || n <= 0 {
		return w != nil && hd%16 == 0
	}
	_ = v[(n-1)*vStride+2*hd-1]
	_ = dst[n*hd-1]
	for j := range n {
		w(hd/16, &v[j*vStride], &dst[j*hd], 64)
	}
	return true
}

// flashTail is FlashUpdate's binary16 or float32 columns past ggml's
// whole 64-value blocks (ggml's unfused scalar tail, as ref.FlashMad
// computes it) in whole vectors, from column done; it returns the columns
// done. The sums are the tail kernel's only when no fused block took them
// (done = 0). half: the accumulator is binary16 (else float32).
func flashTail(t gguf.TensorType, half bool, acc []float32, hd, done int, v []byte, vStride, n int, e []float32, eStride int, sum, tmp []float32) int {
	tails, lanes := active.flashTails[flashKind(t, half)], active.lanes
	if len(tails) == 0 {
		return done
	}
	nh := len(sum)
	for ; done+lanes <= hd; done += lanes {
		off, _ := t.RowBytes(uint64(done))
		for h0 := 0; h0 < nh; {
			k := min(len(tails), nh-h0)
			s := &sum[h0]
			if done > 0 {
				s = &tmp[0] // the sums are done: discard the repeats
			}
			tails[k-1](n, &acc[h0*hd+done], 4*hd, &v[off], vStride, &e[h0*eStride], 4*eStride, s)
			h0 += k
		}
	}
	return done
}

// flashWeights decodes a signed weight (see FlashUpdate).
func flashWeights(e float32) (ms, vs float32) {
	if math.Float32bits(e)>>31 == 0 {
		return e, 1
	}
	return 1, -e
}

// flashRest is FlashUpdate for one head's columns [done, hd) in Go, and
// its sum when withSum; half: a binary16 accumulator.
func flashRest(t gguf.TensorType, half bool, acc []float32, done int, v []byte, vStride int, e []float32, sum *float32, withSum bool, tmp []float32) {
	if done == len(acc) && !withSum {
		return
	}
	f16 := t == gguf.TypeF16
	off, _ := t.RowBytes(uint64(done))
	rb, _ := t.RowBytes(uint64(len(acc)))
	rest, row := acc[done:], tmp[:len(acc)-done]
	s := *sum
	for j, ej := range e {
		ms, vs := flashWeights(ej)
		if withSum {
			s = float32(s*ms) + vs // unfused, as ggml's ISO C build
		}
		if len(rest) == 0 {
			continue
		}
		if ms != 1 {
			ref.FlashScale(rest, ms, half)
		}
		src := v[j*vStride+int(off) : j*vStride+int(rb)]
		if f16 {
			quant.FP16ToFP32Row(src, row)
		} else {
			_ = quant.Dequantize(t, src, row) // F32 included
		}
		ref.FlashMad(rest, row, vs, half)
	}
	*sum = s
}

// flashKinds is the kinds of tile kernels: a V type and accumulator
// (codegen's flashKinds).
const flashKinds = 6

// flashKind indexes impl.flashTiles and flashTails: half, a binary16
// accumulator (F16 or F32 V only).
func flashKind(t gguf.TensorType, half bool) int {
	switch {
	case t == gguf.TypeQ8_0:
		return 1
	case t == gguf.TypeQ4_0:
		return 2
	case t == gguf.TypeF32 && half:
		return 5
	case t == gguf.TypeF32:
		return 4
	case !half:
		return 3
	}
	return 0
}

// FlashKBlock is the cells of one block of the transposed binary16 K
// layout FlashScoresF16 reads: within a block, each value of a K row (one
// per KV head and dimension) keeps its FlashKBlock cells side by side, so
// that a score kernel holds cells in vector lanes.
const FlashKBlock = 16

// FlashScoreChunk is the cells one score kernel step covers at most:
// FlashScoresF16 computes (and may write) whole chunks, so K and dst
// must have room up to n rounded up to it.
const FlashScoreChunk = 64

// flashScoreTile is a generated score kernel (codegen flash_scores.go):
// nc chunks of 4 vectors of cells for several query heads.
type flashScoreTile = func(nc, hd int, k *byte, blockStride int, q *float32, qStride int, dst *float32, dstStride int)

// FlashScoresF16 sets dst[h·dstStride + j], for query heads h < nh and
// cells j < n, to the raw score of head h against cell j of a K panel in
// the transposed layout: value d of cell j is the binary16 at
// k[(j/16)·blockStride + 32·d + 2·(j%16)]. The queries are transposed
// too, q[d·qStride + h], and hold binary16 values as float32 (ggml converts
// the query to the K type). Each score is Σ_d q_h[d]·K[d][j] summed in
// dimension order from 0 in float32; every product of two binary16
// values is exact in float32, so a fused and an unfused sum agree, and
// the kernels' lanes give the bits of the Go loop. Up to
// roundUp(n, FlashScoreChunk) cells are computed and written: K and dst
// must have room for them (the extra scores are not meaningful).
func FlashScoresF16(hd int, k []byte, blockStride, n int, q []float32, qStride, nh int, dst []float32, dstStride int) {
	flashScores(active.flashScores, 2, hd, k, blockStride, n, q, qStride, nh, dst, dstStride)
}

// FlashScoresF32 is FlashScoresF16 over a K panel widened to float32 by
// FlashWidenK (value d of cell j at k[(j/16)·16·hd + 16·d + j%16]), with
// the same bits: every score sums the same exact products in the same
// order. It pays where many query heads score one tile (a prompt's block
// of tokens): the panel is converted once rather than in every call.
// roundUp(n, FlashScoreChunk) cells are read and written, as there.
func FlashScoresF32(hd int, k []float32, n int, q []float32, qStride, nh int, dst []float32, dstStride int) {
	if len(k) == 0 {
		return
	}
	kb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(k))), 4*len(k))
	flashScores(active.flashScoresF32, 4, hd, kb, 4*FlashKBlock*hd, n, q, qStride, nh, dst, dstStride)
}

// flashScores runs FlashScoresF16 or FlashScoresF32 (K elements of es
// bytes) on tiles, or in Go without them.
func flashScores(tiles []flashScoreTile, es, hd int, k []byte, blockStride, n int, q []float32, qStride, nh int, dst []float32, dstStride int) {
	if n <= 0 || nh <= 0 || hd <= 0 {
		return
	}
	_ = q[(hd-1)*qStride+nh-1]
	if len(tiles) == 0 {
		for h := range nh {
			for j := range n {
				dst[h*dstStride+j] = flashScoreGo(es, hd, k, blockStride, j, q[h:], qStride)
			}
		}
		return
	}
	cells := 4 * active.lanes
	nc := (n + cells - 1) / cells
	last := nc*cells - 1
	_ = k[last/FlashKBlock*blockStride+es*FlashKBlock*hd-1]
	_ = dst[(nh-1)*dstStride+nc*cells-1]
	for h0 := 0; h0 < nh; {
		m := min(len(tiles), nh-h0)
		tiles[m-1](nc, hd, &k[0], blockStride, &q[h0], 4*qStride, &dst[h0*dstStride], 4*dstStride)
		h0 += m
	}
}

// FlashWidenK widens the first n cells (rounded up to whole chunks of
// FlashScoreChunk) of one KV head's binary16 K panel, in FlashScoresF16's
// layout (blocks blockStride bytes apart, k at the head's first value),
// into dst in FlashScoresF32's, exactly. It returns false, doing nothing,
// where the CPU has no vector kernel for it: the caller then scores the
// binary16 panel.
func FlashWidenK(k []byte, blockStride, n, hd int, dst []float32) bool {
	w := active.flashWiden
	if w == nil || len(active.flashScoresF32) == 0 || n <= 0 {
		return w != nil && len(active.flashScoresF32) > 0
	}
	blocks := (n + FlashScoreChunk - 1) / FlashScoreChunk * FlashScoreChunk / FlashKBlock
	_ = k[(blocks-1)*blockStride+2*FlashKBlock*hd-1]
	_ = dst[blocks*FlashKBlock*hd-1]
	for b := range blocks {
		w(hd, &k[b*blockStride], &dst[b*FlashKBlock*hd], 4*FlashKBlock)
	}
	return true
}

// flashScoreF16 is one score of FlashScoresF16 in Go: query values q[0],
// q[qStride], q[2·qStride], … against cell j.
func flashScoreF16(hd int, k []byte, blockStride, j int, q []float32, qStride int) float32 {
	return flashScoreGo(2, hd, k, blockStride, j, q, qStride)
}

// flashScoreGo is flashScoreF16 over K elements of es bytes: binary16
// (2) or float32 (4).
func flashScoreGo(es, hd int, k []byte, blockStride, j int, q []float32, qStride int) float32 {
	base := j/FlashKBlock*blockStride + es*(j%FlashKBlock)
	var s float32
	for d := range hd {
		o := base + es*FlashKBlock*d
		var x float32
		if es == 2 {
			x = quant.FP16ToFP32(uint16(k[o]) | uint16(k[o+1])<<8)
		} else {
			x = math.Float32frombits(binary.LittleEndian.Uint32(k[o:]))
		}
		s += q[d*qStride] * x
	}
	return s
}

// FlashScan sets arg[j] to −(max − x_j) for the scores s (len(arg) of
// them), x_j = s[j]·scale and max the running maximum before cell j
// (maxv on entry), and returns the maximum after the last cell: x − max
// (> 0) where the cell raises the maximum and ≤ 0 (−0 included) where it
// does not, the signed argument of the cell's one exponential (see
// FlashExp and FlashUpdate). The maximum moves only when x > max, as in
// ops/ref's flash loop (a NaN never takes it, and of +0 and −0 the
// earlier stays). Whole groups of 16 go to the generated kernel, which
// keeps that rule in a log-step scan; the rest to the Go loop.
func FlashScan(arg, s []float32, scale, maxv float32) float32 {
	s = s[:len(arg)]
	done := 0
	if k := active.flashScan; k != nil && len(s) >= 16 {
		done = len(s) &^ 15
		maxv = k(done/16, &s[0], scale, maxv, &arg[0])
	}
	for j, v := range s[done:] {
		x := v * scale
		arg[done+j] = -(maxv - x)
		if x > maxv {
			maxv = x
		}
	}
	return maxv
}
