//go:build !purego

package simd

import (
	"golang.org/x/sys/cpu"

	"github.com/weft-ml/weft/gguf"
)

// dotKernel, quantKernel and kernelSet are the shapes of the generated
// table (table_amd64.go). A chunk is the number of elements one step of the
// kernel consumes; nb counts chunks.
type dotKernel struct {
	w     gguf.TensorType
	chunk int
	one   func(nb int, w, a *byte) float32
	rows  func(nb int, w *byte, stride int, a *byte, dst *float32) // nil: loop over one
}

type quantKernel struct {
	t     gguf.TensorType
	chunk int
	fn    func(nb int, src *float32, dst *byte) bool
}

// gemmTile computes a gemmRows × T tile (see GemmFunc); dstStride in bytes.
type gemmTile = func(nb int, w *byte, wStride int, a *byte, aStride int, dst *float32, dstStride int)

// gemmKernel lists one format's tiles, tiles[k] taking k+1 tokens.
type gemmKernel struct {
	w     gguf.TensorType
	chunk int
	tiles []gemmTile
}

// packedTile computes one packed group (16 rows) × T interleaved tokens,
// storing the lanes set in mask; dstStride in bytes.
type packedTile = func(nb int, w *byte, a *byte, dst *float32, dstStride int, mask int)

// packedKernel lists one format's packed-layout tiles, tiles[k] taking k+1
// tokens.
type packedKernel struct {
	w     gguf.TensorType
	tiles []packedTile
}

type kernelSet struct {
	name   string
	dots   []dotKernel
	quants []quantKernel
	gemms  []gemmKernel
	packs  []packedKernel
	// silu and softmaxExp work on whole groups of 16 floats (see
	// elementwise.go); nil where the variant has none.
	silu       func(ng int, x, dst *float32)
	softmaxExp func(ng int, row *float32, maxv float32) float64
	// mul and add: dst = a op b over nc chunks of lanes floats.
	mul, add func(nc int, dst, a, b *float32)
	scaleMax func(nc int, row *float32, scale float32) (float32, bool)
	scale    func(nc int, row *float32, s float32)
	lanes    int
	// gelu: dst = GELU(x) over nc chunks of lanes floats, by table.
	gelu func(nc int, dst, x, table *float32)
	// flashF16 and flashF32: flash attention's acc = fma(x, vs, acc)
	// over nc chunks of lanes values (x binary16, acc rounded to
	// binary16; x float32).
	flashF16 func(nc int, acc *float32, x *byte, vs float32)
	flashF32 func(nc int, acc *float32, x *float32, vs float32)
	// flashExp and flashTiles: tiled flash attention's exponential and
	// accumulator updates (see FlashExp and FlashUpdate).
	flashExp   func(ng int, x, dst *float32) uint64
	flashTiles [flashKinds][]flashTile
	// flashScores: F16 scores over a transposed K (see FlashScoresF16),
	// flashScores[k] taking k+1 query heads.
	flashScores []flashScoreTile
	// flashScoresF32: the same over a widened K (FlashScoresF32).
	flashScoresF32 []flashScoreTile
	// flashScan: the tiles' running maximum (see FlashScan); nil: Go.
	flashScan func(ng int, s *float32, scale, maxv float32, arg *float32) float32
	// flashTails: the unfused tail past whole 64-value blocks, one vector
	// of columns (see FlashUpdate), by flashKind (none for the quantized
	// kinds); flashTails[kind][k] takes k+1 heads.
	flashTails [flashKinds][]flashTile
	// widenF16, f16Wide and f16WideIn: the wide F16 GEMM
	// (gemm_f16_amd64.go); nil where the variant has none.
	widenF16           widenFunc
	f16Wide, f16WideIn []f16WideTile
	// f32Vec and f32Tiny: float32 dot products of a with rows of b in
	// llama.cpp's orders (see VecDotF32Rows and TinyDotF32Rows).
	f32Vec, f32Tiny f32RowsKernel
	// bf16DP: BF16 GEMM tiles that sum with VDPBF16PS, tiles[k] taking
	// k+1 tokens, in the order of gemms' BF16 tiles (which sum with FMAs);
	// used instead of those where the CPU has AVX512_BF16.
	bf16DP []gemmTile
	// decodeF16 and decodeBF16: one token against rows streaming from
	// memory (see decodeRowsF16); nil where the variant has none.
	decodeF16, decodeBF16 decodeKernel
	// ropePairs and ropeNeoX: RoPE's rotation of one token's heads (see
	// RoPERotate), chunks of lanes floats; nil where the variant has none.
	ropePairs ropePairsKernel
	ropeNeoX  ropeNeoXKernel
}

// hasBF16DP reports whether this CPU has VDPBF16PS (AVX512_BF16).
var hasBF16DP = cpu.X86.HasAVX512BF16

// supported reports whether this CPU runs the named variant. Every
// AVX2+FMA processor also has F16C, which x/sys/cpu does not report.
func supported(name string) bool {
	x := cpu.X86
	avx2 := x.HasAVX2 && x.HasFMA
	switch name {
	case "avx2":
		return avx2
	case "avx512vnni":
		return avx2 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI
	}
	return false
}

func cpuImpls() []*impl {
	var out []*impl
	for i := range asmKernels {
		if supported(asmKernels[i].name) {
			out = append(out, wrapSet(&asmKernels[i]))
		}
	}
	return out
}

func wrapSet(s *kernelSet) *impl {
	v := &impl{
		name:   s.name,
		dots:   map[gguf.TensorType]DotFunc{},
		rows:   map[gguf.TensorType]RowsFunc{},
		quants: map[gguf.TensorType]QuantFunc{},
		gemms:  map[gguf.TensorType]GemmFunc{},
		packed: map[gguf.TensorType]PackedGemmFunc{},
	}
	for _, k := range s.dots {
		v.dots[k.w] = wrapDot(k)
		v.rows[k.w] = wrapRows(k)
	}
	for _, k := range s.gemms {
		v.gemms[k.w] = wrapGemm(k, v.dots[k.w], v.rows[k.w])
	}
	if k, ok := bf16DPKernel(s); ok && hasBF16DP {
		v.gemms[k.w] = wrapGemm(k, v.dots[k.w], v.rows[k.w])
	}
	if f, ok := v.gemms[gguf.TypeF16]; ok && s.widenF16 != nil {
		v.gemms[gguf.TypeF16] = wrapGemmF16Wide(s.f16Wide, s.f16WideIn, s.widenF16, f, v.dots[gguf.TypeF16])
	}
	for _, k := range s.packs {
		v.packed[k.w] = wrapPacked(k)
	}
	for _, k := range s.quants {
		v.quants[k.t] = wrapQuant(k)
	}
	v.silu, v.softmaxExp = s.silu, s.softmaxExp
	v.mul, v.add, v.lanes = s.mul, s.add, s.lanes
	v.scaleMax, v.scale = s.scaleMax, s.scale
	v.gelu = s.gelu
	v.flashF16, v.flashF32 = s.flashF16, s.flashF32
	v.flashExp, v.flashTiles = s.flashExp, s.flashTiles
	v.flashScores, v.flashScan, v.flashTails = s.flashScores, s.flashScan, s.flashTails
	v.flashWiden, v.flashScoresF32 = s.widenF16, s.flashScoresF32
	v.f32Vec, v.f32Tiny = s.f32Vec, s.f32Tiny
	v.decode = decodeFuncs(s, v)
	v.ropePairs, v.ropeNeoX = s.ropePairs, s.ropeNeoX
	return v
}

// bf16DPKernel returns s's VDPBF16PS tiles as a GEMM kernel of the same
// chunk as its FMA tiles for BF16; false where s has none.
func bf16DPKernel(s *kernelSet) (gemmKernel, bool) {
	if len(s.bf16DP) == 0 {
		return gemmKernel{}, false
	}
	for _, k := range s.gemms {
		if k.w == gguf.TypeBF16 {
			return gemmKernel{w: k.w, chunk: k.chunk, tiles: s.bf16DP}, true
		}
	}
	return gemmKernel{}, false
}
