package backends

import (
	"fmt"

	"github.com/weft-ml/weft/graph"
)

// Layout is a backend-preferred arrangement of a weight's bytes, made at
// compile time (for example Q4_0 rows interleaved for a GEMM kernel).
type Layout interface {
	Name() string
	Backend() string // the backend whose kernels read it
	// Accepts reports whether w, read by readers, should take this layout.
	Accepts(w *graph.Node, readers []*graph.Node) bool
	// Repack rearranges the bytes of a weight of type t.
	Repack(t graph.Type, src []byte) ([]byte, error)
}

// SizedLayout is an optional Layout capability: knowing each repacked
// size in advance, the pass allocates the side data once and repacks in
// place, so compiling in memory holds no second copy of the weights.
type SizedLayout interface {
	PackedSize(t graph.Type) (int, error)
	RepackInto(t graph.Type, src, dst []byte) error
}

// PackedBytes returns a repacked weight's bytes from the side data, checking
// that the recorded range lies inside it.
func PackedBytes(n *graph.Node, side []byte) ([]byte, error) {
	l := n.Layout
	if l == nil {
		return nil, fmt.Errorf("weight %q has no repacked layout", n.Name)
	}
	if l.Offset < 0 || l.Size < 0 || l.Offset > int64(len(side)) || l.Size > int64(len(side))-l.Offset {
		return nil, fmt.Errorf("weight %q: layout %s range [%d, +%d) is outside the %d-byte side data", n.Name, l.Name, l.Offset, l.Size, len(side))
	}
	return side[l.Offset : l.Offset+l.Size], nil
}

// CopyLayout is the trivial layout: the bytes unchanged. It exercises the
// mechanism and is a template for real ones.
type CopyLayout struct{ For string }

// Name returns "copy".
func (CopyLayout) Name() string { return "copy" }

// Backend returns the backend it was made for.
func (l CopyLayout) Backend() string { return l.For }

// Accepts takes every matrix weight.
func (CopyLayout) Accepts(w *graph.Node, _ []*graph.Node) bool { return len(w.Type.Shape) == 2 }

// Repack copies src.
func (CopyLayout) Repack(_ graph.Type, src []byte) ([]byte, error) {
	return append([]byte(nil), src...), nil
}
