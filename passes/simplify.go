package passes

import (
	"fmt"
	"sort"
	"strings"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// simplify folds no-op nodes into their input, merges common
// subexpressions and removes dead nodes. Shapes are node types, resolved
// by inference when a node is made, so there is no shape arithmetic left
// to fold at this level.
func simplify(g *graph.Graph) (Change, error) {
	var c Change
	e := newEditor(g)
	order, err := g.TopoOrder()
	if err != nil {
		return c, err
	}
	seen := map[string]int{}
	gone := map[int]bool{}
	for _, id := range order {
		n := g.Nodes[id]
		if in, ok := noOp(g, n); ok {
			e.replace(id, in)
			gone[id] = true
			c.add(-1, "folded no-op %s %q into its input", n.Op, n.Name)
			continue
		}
		key, ok := cseKey(n)
		if !ok {
			continue
		}
		if first, dup := seen[key]; dup {
			e.replace(id, first)
			gone[id] = true
			c.add(-1, "merged %s %q into identical node %q", n.Op, n.Name, g.Nodes[first].Name)
			continue
		}
		seen[key] = id
	}
	keep := live(g)
	for _, n := range g.Nodes {
		if !keep[n.ID] && !gone[n.ID] {
			c.add(-1, "removed dead %s %q", n.Op, n.Name)
		}
	}
	e.finish()
	return c, nil
}

// noOp returns the input a node passes through unchanged.
func noOp(g *graph.Graph, n *graph.Node) (int, bool) {
	switch n.Op {
	case ops.Scale:
		return n.Inputs[0], n.Attrs["scale"] == 1
	case ops.Part:
		in := g.Nodes[n.Inputs[0]]
		return n.Inputs[0], n.Attrs.Int("start") == 0 && in.Type.Shape.Equal(n.Type.Shape)
	case ops.Copy:
		in := g.Nodes[n.Inputs[0]]
		return n.Inputs[0], in.Backend == n.Backend
	}
	return -1, false
}

// cseKey identifies a node by everything its value depends on; graph
// inputs and ops with side effects (attention writes the KV cache) are
// never merged, nor are custom ops, which the passes leave alone (their
// kernels may have effects weft cannot see).
func cseKey(n *graph.Node) (string, bool) {
	if ops.IsCustom(n.Op) {
		return "", false
	}
	switch n.Op {
	case "Input", ops.Attention:
		return "", false
	case "Weight":
		return fmt.Sprintf("W|%s|%s|%v", n.Tensor, n.Type, n.Layout), true
	}
	keys := make([]string, 0, len(n.Attrs))
	for k, v := range n.Attrs {
		keys = append(keys, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(keys)
	return fmt.Sprintf("%s|%v|%s|%s", n.Op, n.Inputs, strings.Join(keys, ","), n.Backend), true
}
