package passes

import (
	"fmt"
	"slices"
	"sync"

	"github.com/weft-ml/weft/gguf"
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

var (
	layoutMu sync.RWMutex
	layouts  []Layout
)

// RegisterLayout makes a layout available to the weight-layout pass; the
// first registered layout that accepts a weight wins.
func RegisterLayout(l Layout) {
	layoutMu.Lock()
	defer layoutMu.Unlock()
	layouts = append(layouts, l)
}

func registeredLayouts() []Layout {
	layoutMu.RLock()
	defer layoutMu.RUnlock()
	return append([]Layout(nil), layouts...)
}

// Releaser is an optional WeightSource capability: a memory-mapped file
// can drop a tensor's pages once its bytes have been repacked, since the
// repacked copy replaces them.
type Releaser interface {
	ReleaseTensorData(t *gguf.TensorInfo)
}

// packAlign aligns every repacked weight in the side data.
const packAlign = 64

// SizedLayout is an optional Layout capability: knowing each repacked
// size in advance, the pass allocates the side data once and repacks in
// place, so compiling in memory holds no second copy of the weights.
type SizedLayout interface {
	PackedSize(t graph.Type) (int, error)
	RepackInto(t graph.Type, src, dst []byte) error
}

// chosen is a weight and the layout it takes.
type chosen struct {
	n *graph.Node
	l Layout
}

// chooseLayouts repacks every weight that a layout of its backend accepts,
// appending the bytes to c.Packed and recording where in the node.
func chooseLayouts(g *graph.Graph, c Config) (Change, error) {
	var ch Change
	ls := registeredLayouts()
	if len(ls) == 0 || c.Weights == nil || c.Packed == nil {
		return ch, nil
	}
	picks := pickLayouts(g, c, ls)
	if err := reserve(picks, c); err != nil {
		return ch, err
	}
	for _, p := range picks {
		if err := repack(p.n, p.l, c); err != nil {
			return ch, err
		}
		ch.add(p.n.ID, "weight %q repacked as %s for %s (%d bytes)", p.n.Name, p.l.Name(), p.l.Backend(), p.n.Layout.Size)
	}
	return ch, nil
}

// pickLayouts gives each weight the first layout of its backend that
// accepts it.
func pickLayouts(g *graph.Graph, c Config, ls []Layout) []chosen {
	var out []chosen
	users := g.Users()
	for _, n := range g.Nodes {
		if n.Op != "Weight" || n.Layout != nil {
			continue
		}
		readers := make([]*graph.Node, len(users[n.ID]))
		for i, u := range users[n.ID] {
			readers[i] = g.Nodes[u]
		}
		for _, l := range ls {
			if l.Backend() == backendOf(c, n) && l.Accepts(n, readers) {
				out = append(out, chosen{n, l})
				break
			}
		}
	}
	return out
}

// reserve grows c.Packed once to hold every sized layout's output.
func reserve(picks []chosen, c Config) error {
	total := len(*c.Packed)
	for _, p := range picks {
		if sl, ok := p.l.(SizedLayout); ok {
			size, err := sl.PackedSize(p.n.Type)
			if err != nil {
				return fmt.Errorf("repacking %q as %s: %w", p.n.Name, p.l.Name(), err)
			}
			total += size + packAlign
		}
	}
	if c.Alloc != nil && cap(*c.Packed) < total {
		buf, err := c.Alloc(total)
		if err != nil {
			return err
		}
		*c.Packed = append(buf[:0], *c.Packed...)
		return nil
	}
	*c.Packed = slices.Grow(*c.Packed, total-len(*c.Packed))
	return nil
}

func repack(n *graph.Node, l Layout, c Config) error {
	t, ok := c.Weights.Tensor(n.Tensor)
	if !ok {
		return fmt.Errorf("weight %q is not in the model file", n.Tensor)
	}
	for len(*c.Packed)%packAlign != 0 {
		*c.Packed = append(*c.Packed, 0)
	}
	off := len(*c.Packed)
	if err := repackAppend(n, l, c, c.Weights.TensorData(t)); err != nil {
		return fmt.Errorf("repacking %q as %s: %w", n.Name, l.Name(), err)
	}
	if r, ok := c.Weights.(Releaser); ok {
		r.ReleaseTensorData(t)
	}
	n.Layout = &graph.Layout{Name: l.Name(), Offset: int64(off), Size: int64(len(*c.Packed) - off)}
	return nil
}

// repackAppend appends src repacked by l to c.Packed, in place when l is
// sized.
func repackAppend(n *graph.Node, l Layout, c Config, src []byte) error {
	if sl, ok := l.(SizedLayout); ok {
		size, err := sl.PackedSize(n.Type)
		if err != nil {
			return err
		}
		off := len(*c.Packed)
		*c.Packed = slices.Grow(*c.Packed, size)[:off+size]
		return sl.RepackInto(n.Type, src, (*c.Packed)[off:])
	}
	out, err := l.Repack(n.Type, src)
	if err != nil {
		return err
	}
	*c.Packed = append(*c.Packed, out...)
	return nil
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
// mechanism and is a template for real ones; it is not registered.
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
