package passes

import (
	"fmt"
	"slices"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
)

// Releaser is an optional WeightSource capability: a memory-mapped file
// can drop a tensor's pages once its bytes have been repacked, since the
// repacked copy replaces them.
type Releaser interface {
	ReleaseTensorData(t *gguf.TensorInfo)
}

// packAlign aligns every repacked weight in the side data.
const packAlign = 64

// chosen is a weight and the layout it takes.
type chosen struct {
	n *graph.Node
	l backends.Layout
}

// chooseLayouts repacks every weight that a layout of its backend accepts,
// appending the bytes to c.Packed and recording where in the node.
func chooseLayouts(g *graph.Graph, c Config) (Change, error) {
	var ch Change
	ls := c.layouts()
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
func pickLayouts(g *graph.Graph, c Config, ls []backends.Layout) []chosen {
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
		if sl, ok := p.l.(backends.SizedLayout); ok {
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

func repack(n *graph.Node, l backends.Layout, c Config) error {
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
func repackAppend(n *graph.Node, l backends.Layout, c Config, src []byte) error {
	if sl, ok := l.(backends.SizedLayout); ok {
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
