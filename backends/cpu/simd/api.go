package simd

import (
	"os"
	"slices"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// DotFunc returns the dot product of n elements of a weight row and an
// activation row of type quant.VecDotType(w); preconditions as for
// quant.VecDot (see quant.CheckVecDot).
type DotFunc = func(n int, wRow, aRow []byte) float32

// RowsFunc sets dst[i] to the dot product of weight row i (rows rowBytes
// apart in w, nRows of them) with aRow, n elements each.
type RowsFunc = func(n int, w []byte, rowBytes int, nRows int, aRow []byte, dst []float32)

// QuantFunc quantizes src into dst, like quant.QuantizeRow.
type QuantFunc = func(src []float32, dst []byte)

// impl is one instruction-set variant's set of kernels.
type impl struct {
	name   string
	dots   map[gguf.TensorType]DotFunc
	rows   map[gguf.TensorType]RowsFunc
	quants map[gguf.TensorType]QuantFunc
	gemms  map[gguf.TensorType]GemmFunc
	packed map[gguf.TensorType]PackedGemmFunc
	// element-wise kernels on groups of 16 floats; nil: pure Go
	silu           func(ng int, x, dst *float32)
	softmaxExp     func(ng int, row *float32, maxv float32) float64
	mul, add       func(nc int, dst, a, b *float32) // nil: pure Go
	scaleMax       func(nc int, row *float32, scale float32) (float32, bool)
	scale          func(nc int, row *float32, s float32)
	lanes          int // floats per chunk of mul, add, scaleMax, scale, gelu and flash
	gelu           func(nc int, dst, x, table *float32)
	flashF16       func(nc int, acc *float32, x *byte, vs float32)
	flashF32       func(nc int, acc *float32, x *float32, vs float32)
	flashExp       func(ng int, x, dst *float32) uint64                                // see FlashExp; nil: pure Go
	flashTiles     [flashKinds][]flashTile                                             // by flashKind; see FlashUpdate
	flashScores    []flashScoreTile                                                    // see FlashScoresF16; nil: pure Go
	flashScan      func(ng int, s *float32, scale, maxv float32, arg *float32) float32 // see FlashScan; nil: Go
	flashTails     [flashKinds][]flashTile                                             // unfused tail vectors by flashKind; see FlashUpdate
	flashWiden     func(ns int, src *byte, dst *float32, dstStride int)                // see FlashWidenF16; nil: none
	flashScoresF32 []flashScoreTile                                                    // see FlashScoresF32; nil: pure Go
	f32Vec         f32RowsKernel                                                       // see VecDotF32Rows; nil: ops/ref
	f32Tiny        f32RowsKernel                                                       // see TinyDotF32Rows; nil: ops/ref
	decode         map[gguf.TensorType]RowsFunc                                        // see DecodeRows; nil: one row at a time
	ropePairs      ropePairsKernel                                                     // see RoPERotate; nil: ops/ref
	ropeNeoX       ropeNeoXKernel                                                      // see RoPERotate; nil: ops/ref
}

const pureGo = "purego"

// available lists the variants this CPU can run, pure Go first, best last.
var available = append([]*impl{{name: pureGo}}, cpuImpls()...)

// active is the variant in use; tests swap it with withVariant.
var active = choose()

func choose() *impl {
	if os.Getenv("WEFT_PUREGO") == "1" {
		return available[0]
	}
	return available[len(available)-1]
}

// Variant names the kernels in use: "avx512vnni", "avx2" or "purego".
func Variant() string { return active.name }

// Variants lists the variants this CPU can run, pure Go first.
func Variants() []string {
	names := make([]string, len(available))
	for i, v := range available {
		names[i] = v.name
	}
	return names
}

// withVariant makes the named variant active and returns a function that
// restores the previous one; ok is false if the CPU lacks it.
func withVariant(name string) (restore func(), ok bool) {
	i := slices.IndexFunc(available, func(v *impl) bool { return v.name == name })
	if i < 0 {
		return func() {}, false
	}
	prev := active
	active = available[i]
	return func() { active = prev }, true
}

// VecDot returns the fastest dot-product kernel for weights of type w
// against activations of type quant.VecDotType(w).
func VecDot(w gguf.TensorType) DotFunc {
	if f, ok := active.dots[w]; ok {
		return f
	}
	if f, ok := fallbacks.dots[w]; ok {
		return f
	}
	return func(n int, wRow, aRow []byte) float32 { return quant.VecDot(w, n, wRow, aRow) }
}

// VecDotRows returns the fastest kernel for nRows dot products of weight
// rows of type w against one activation row.
func VecDotRows(w gguf.TensorType) RowsFunc {
	if f, ok := active.rows[w]; ok {
		return f
	}
	if f, ok := fallbacks.rows[w]; ok {
		return f
	}
	dot := VecDot(w)
	return func(n int, wm []byte, rowBytes, nRows int, aRow []byte, dst []float32) {
		rowByRow(dot, n, wm, rowBytes, nRows, aRow, dst)
	}
}

// rowByRow stores in dst[i] the dot product of row i of w with a.
func rowByRow(dot DotFunc, n int, w []byte, rowBytes, nRows int, a []byte, dst []float32) {
	for i := range nRows {
		dst[i] = dot(n, w[i*rowBytes:], a)
	}
}

// DecodeRows returns the kernel for one token against weight rows that
// stream from memory (a decode matmul), with VecDot's bits. For F16 and
// BF16 on AVX-512 that is a kernel that loops over the rows itself and
// prefetches the rows ahead (decode_amd64.go); elsewhere one row at a
// time: one sequential stream per thread measured ~35% more bandwidth
// than the multi-row kernel's four streams a row apart on a Zen 5
// (BenchmarkDecodeStream), while VecDotRows, sharing the widened
// activation, wins on rows in cache.
func DecodeRows(w gguf.TensorType) RowsFunc {
	if f, ok := active.decode[w]; ok {
		return f
	}
	if w != gguf.TypeF16 && w != gguf.TypeBF16 {
		return VecDotRows(w)
	}
	dot := VecDot(w)
	return func(n int, wm []byte, rowBytes, nRows int, aRow []byte, dst []float32) {
		rowByRow(dot, n, wm, rowBytes, nRows, aRow, dst)
	}
}

// QuantizeRow returns the fastest quantizer to type t; its output is
// bit-identical to quant.QuantizeRow.
func QuantizeRow(t gguf.TensorType) QuantFunc {
	if f, ok := active.quants[t]; ok {
		return f
	}
	if f, ok := fallbacks.quants[t]; ok {
		return f
	}
	return func(src []float32, dst []byte) { quant.QuantizeRow(t, src, dst) }
}
