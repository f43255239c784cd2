package cpu

import (
	"os"
	"slices"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// Layouts are the CPU backend's weight layouts: Q4_0, Q8_0, Q4_K, Q5_K,
// Q6_K and IQ4_XS matrices interleaved 16 rows at a time for the packed
// VNNI kernels (see simd.Repack). The weight-layout pass applies them at
// compile time; bindWeight then reads the repacked bytes instead of the
// GGUF ones.
func (Backend) Layouts() []backends.Layout {
	var ls []backends.Layout
	for _, t := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS} {
		ls = append(ls, packedLayout{t})
	}
	return ls
}

// NoRepackEnv, set to 1, keeps every weight in its GGUF layout.
const NoRepackEnv = "WEFT_NO_REPACK"

type packedLayout struct{ t gguf.TensorType }

func (l packedLayout) Name() string { return simd.PackedLayoutName(l.t) }

func (packedLayout) Backend() string { return Backend{}.Name() }

// Accepts takes a matrix of the layout's type whose columns fill whole
// blocks, when this CPU has the packed kernels and every reader uses it as
// a matmul weight, or, for Q4_0 and Q8_0, as the table of a GetRows
// (simd.PackedGetRows: a tied embedding is also the output projection, the
// largest matmul of a small model). Other tables stay as they are.
func (l packedLayout) Accepts(w *graph.Node, readers []*graph.Node) bool {
	if os.Getenv(NoRepackEnv) == "1" || !simd.HasPackedKernels(l.t) {
		return false
	}
	sh := w.Type.Shape
	if w.Type.DType != l.t || len(sh) != 2 || sh[0].IsSym() || sh[1].IsSym() || sh[1].N%int64(l.t.BlockSize()) != 0 || len(readers) == 0 {
		return false
	}
	for _, r := range readers {
		table := r.Op == ops.GetRows && r.Inputs[0] == w.ID && (l.t == gguf.TypeQ4_0 || l.t == gguf.TypeQ8_0)
		if !table && (!slices.Contains(ops.MatMulWeights(r), w.ID) || r.Inputs[0] == w.ID) {
			return false
		}
	}
	return true
}

func (l packedLayout) Repack(t graph.Type, src []byte) ([]byte, error) {
	return simd.Repack(l.t, int(t.Shape[0].N), int(t.Shape[1].N), src)
}

// PackedSize is the repacked size of a weight of type t.
func (l packedLayout) PackedSize(t graph.Type) (int, error) {
	return simd.PackedSize(l.t, int(t.Shape[0].N), int(t.Shape[1].N))
}

// RepackInto repacks into dst, PackedSize bytes long.
func (l packedLayout) RepackInto(t graph.Type, src, dst []byte) error {
	return simd.RepackInto(l.t, int(t.Shape[0].N), int(t.Shape[1].N), src, dst)
}
