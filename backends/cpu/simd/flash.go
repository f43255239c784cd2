package simd

import (
	"math"
	"math/bits"

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
// updates of a 64-value accumulator block from V rows vStride bytes apart.
type flashTile = func(n int, acc *float32, v *byte, vStride int, ms, vs *float32)

// flashExpGroups is the most groups of 16 one flashExp call takes (its
// result has one bit per group).
const flashExpGroups = 64

// FlashExp sets dst[i] to float32(math.Exp(float64(x[i]))), ops/ref's
// expf, bit for bit: the generated kernel computes it in double
// precision and flags the groups of 16 with a lane it cannot vouch for
// (near a float32 rounding boundary, or outside [−87, 0]); those groups
// and the tail take the scalar function.
func FlashExp(x, dst []float32) {
	dst = dst[:len(x)]
	done := 0
	if k := active.flashExp; k != nil {
		for done+16 <= len(x) {
			ng := min(flashExpGroups, (len(x)-done)/16)
			bad := k(ng, &x[done], &dst[done])
			for bad != 0 {
				g := bits.TrailingZeros64(bad)
				bad &= bad - 1
				scalarExp(x[done+16*g:done+16*g+16], dst[done+16*g:])
			}
			done += 16 * ng
		}
	}
	scalarExp(x[done:], dst[done:])
}

func scalarExp(x, dst []float32) {
	for i, v := range x {
		dst[i] = float32(math.Exp(float64(v)))
	}
}

// FlashUpdate applies n cells' online-softmax updates to one head's
// accumulator acc (ops/ref's flash loop after the exponentials): for
// cell j, when ms[j] ≠ 1, ref.FlashScale(acc, ms[j]); then
// ref.FlashMad(acc, V_j, vs[j]) with V_j the head's values of V row j,
// stored as t (F16, Q8_0 or Q4_0) at v[j·vStride:]. A binary16 V keeps a
// binary16 accumulator, as ggml does. ggml's whole 64-value blocks go to
// the generated kernel, cell after cell with the block in registers;
// the tail, and everything without a kernel, to the reference's
// functions. tmp holds len(acc) floats.
func FlashUpdate(t gguf.TensorType, acc []float32, v []byte, vStride, n int, ms, vs, tmp []float32) {
	if n <= 0 {
		return
	}
	hd := len(acc)
	rb, _ := t.RowBytes(uint64(hd))
	_ = v[(n-1)*vStride+int(rb)-1]
	ms, vs = ms[:n], vs[:n]
	done := 0
	if k := active.flashTiles[flashKind(t)]; k != nil {
		blk, _ := t.RowBytes(flashBlock)
		for ; done+flashBlock <= hd; done += flashBlock {
			k(n, &acc[done], &v[done/flashBlock*int(blk)], vStride, &ms[0], &vs[0])
		}
	}
	if done == hd {
		return
	}
	f16 := t == gguf.TypeF16
	off, _ := t.RowBytes(uint64(done))
	rest, row := acc[done:], tmp[:hd-done]
	for j := range n {
		if ms[j] != 1 {
			ref.FlashScale(rest, ms[j], f16)
		}
		src := v[j*vStride+int(off) : j*vStride+int(rb)]
		if f16 {
			quant.FP16ToFP32Row(src, row)
		} else {
			_ = quant.Dequantize(t, src, row)
		}
		ref.FlashMad(rest, row, vs[j], f16)
	}
}

// flashKind indexes impl.flashTiles.
func flashKind(t gguf.TensorType) int {
	switch t {
	case gguf.TypeQ8_0:
		return 1
	case gguf.TypeQ4_0:
		return 2
	}
	return 0
}
