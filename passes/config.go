package passes

import (
	"fmt"
	"slices"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
)

// WeightSource supplies weight bytes for compile-time repacking.
type WeightSource interface {
	Tensor(name string) (*gguf.TensorInfo, bool)
	TensorData(t *gguf.TensorInfo) []byte
}

// Config is what the passes need to know about the target.
type Config struct {
	// Backends in order of preference; the last one is the host, which
	// holds the graph inputs. Empty: one backend called "cpu" that
	// supports everything.
	Backends []backends.Backend
	// Tokens is the batch size activation buffers are planned for.
	Tokens int
	// Weights, when set, lets weight-layout repack weights into Packed.
	Weights WeightSource
	Packed  *[]byte
	// Alloc, when set, provides the memory for Packed (for example pages
	// the kernel may back with huge pages); nil: the Go heap.
	Alloc func(size int) ([]byte, error)
}

// allOps stands in for a backend when none is configured.
type allOps struct{}

func (allOps) Name() string                             { return "cpu" }
func (allOps) Supports(*graph.Node, *graph.Graph) error { return nil }

func (c Config) backends() []backends.Backend {
	if len(c.Backends) == 0 {
		return []backends.Backend{allOps{}}
	}
	return c.Backends
}

// layouts gathers the weight layouts the configured backends offer, in
// backend order; the first that accepts a weight wins.
func (c Config) layouts() []backends.Layout {
	var ls []backends.Layout
	for _, b := range c.backends() {
		if lp, ok := b.(backends.LayoutProvider); ok {
			ls = append(ls, lp.Layouts()...)
		}
	}
	return ls
}

func (c Config) host() backends.Backend { b := c.backends(); return b[len(b)-1] }

// supports reports whether some backend can run n; fusions only make
// nodes that will find a home.
func (c Config) supports(n *graph.Node, g *graph.Graph) bool {
	for _, b := range c.backends() {
		if b.Supports(n, g) == nil {
			return true
		}
	}
	return false
}

// Names lists every pass in pipeline order.
func Names() []string {
	return []string{"simplify", "fuse-dequant", "fuse-qkv", "fuse-gateup", "fuse-norm", "fuse-residual", "fuse-bias", "placement", "weight-layout", "memory-plan"}
}

// Make returns the pass called name.
func Make(name string, c Config) (Pass, error) {
	switch name {
	case "simplify":
		return New(name, simplify), nil
	case "fuse-dequant":
		return New(name, fuseDequant), nil
	case "fuse-qkv":
		return New(name, func(g *graph.Graph) (Change, error) { return fuseQKV(g, c) }), nil
	case "fuse-gateup":
		return New(name, func(g *graph.Graph) (Change, error) { return fuseGateUp(g, c) }), nil
	case "fuse-norm":
		return New(name, func(g *graph.Graph) (Change, error) { return fuseNorm(g, c) }), nil
	case "fuse-residual":
		return New(name, func(g *graph.Graph) (Change, error) { return fuseResidual(g, c) }), nil
	case "fuse-bias":
		return New(name, func(g *graph.Graph) (Change, error) { return fuseBias(g, c) }), nil
	case "placement":
		return New(name, func(g *graph.Graph) (Change, error) { return place(g, c) }), nil
	case "weight-layout":
		return New(name, func(g *graph.Graph) (Change, error) { return chooseLayouts(g, c) }), nil
	case "memory-plan":
		return New(name, func(g *graph.Graph) (Change, error) { return planMemory(g, c) }), nil
	}
	return nil, fmt.Errorf("unknown pass %q (passes: %v)", name, Names())
}

// Select builds the pass list: only (in the order given; empty: all),
// minus disable. O0 keeps placement alone, which every plan needs.
func Select(c Config, only, disable []string, o0 bool) ([]Pass, error) {
	names := Names()
	if len(only) > 0 {
		names = only
	}
	if o0 {
		names = []string{"placement"}
	}
	for _, d := range disable {
		if !slices.Contains(Names(), d) {
			return nil, fmt.Errorf("cannot disable unknown pass %q (passes: %v)", d, Names())
		}
	}
	var out []Pass
	for _, n := range names {
		if slices.Contains(disable, n) {
			continue
		}
		p, err := Make(n, c)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
