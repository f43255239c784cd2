package passes

import (
	"fmt"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// fusion is one rewrite found by a pattern: the fused node replaces the
// node root; members are all the nodes it subsumes.
type fusion struct {
	root    int
	members []int
	node    *graph.Node
}

// applyFusions adds each fused node, keeps it when a backend supports it
// and redirects the root's readers; the members then die.
func applyFusions(g *graph.Graph, c Config, found []fusion) (Change, error) {
	var ch Change
	e := newEditor(g)
	for _, f := range found {
		names := make([]string, len(f.members))
		anchor := 0
		for i, m := range f.members {
			names[i] = g.Nodes[m].Name
			anchor = max(anchor, m)
		}
		f.node.Fused = names
		if f.node.Name == "" {
			f.node.Name = fusedName(names...)
		}
		f.node.Cause = fmt.Sprintf("fused %d nodes", len(names))
		id, err := e.add(anchor, f.node)
		if err != nil {
			return ch, err
		}
		if !c.supports(f.node, g) {
			continue
		}
		e.replace(f.root, id)
		ch.add(id, "%s %q <- %v", f.node.Op, f.node.Name, names)
	}
	remapAll(&ch, e.finish())
	return ch, nil
}

// op returns node id when it has op name.
func op(g *graph.Graph, id int, name string) *graph.Node {
	if n := g.Nodes[id]; n.Op == name {
		return n
	}
	return nil
}

// fuseDequant makes matmuls read quantized weights directly instead of a
// Dequantize of them.
func fuseDequant(g *graph.Graph) (Change, error) {
	var ch Change
	for _, n := range g.Nodes {
		if n.Op != ops.MatMul {
			continue
		}
		d := op(g, n.Inputs[1], ops.Dequantize)
		if d == nil || g.Nodes[d.Inputs[0]].Op != "Weight" {
			continue
		}
		n.Inputs[1] = d.Inputs[0]
		n.Fused = append(n.Fused, d.Name)
		n.Cause = "reads quantized blocks directly"
		ch.add(n.ID, "MatMul %q reads %q without dequantizing", n.Name, g.Nodes[d.Inputs[0]].Name)
	}
	remapAll(&ch, compact(g, func(id int) float64 { return float64(id) }))
	return ch, nil
}

// fuseNorm folds the weight multiply (and LayerNorm's bias add) into the
// norm that feeds it.
func fuseNorm(g *graph.Graph, c Config) (Change, error) {
	fused := map[string]string{ops.RMSNorm: ops.RMSNormMul, ops.LayerNorm: ops.LayerNormMul}
	users := g.Users()
	var found []fusion
	for _, n := range g.Nodes {
		to, ok := fused[n.Op]
		if !ok {
			continue
		}
		mul := single(g, users, n.ID)
		if mul < 0 || g.Nodes[mul].Op != ops.Mul || g.Nodes[mul].Inputs[0] != n.ID || !isRow(g, g.Nodes[mul].Inputs[1]) {
			continue
		}
		attrs := graph.Attrs{"eps": n.Attrs["eps"]}
		if grp, ok := n.Attrs["group"]; ok {
			attrs["group"] = grp
		}
		f := fusion{root: mul, members: []int{n.ID, mul}, node: &graph.Node{Op: to, Attrs: attrs, Inputs: []int{n.Inputs[0], g.Nodes[mul].Inputs[1]}}}
		if add := single(g, users, mul); to == ops.LayerNormMul && add >= 0 && g.Nodes[add].Op == ops.Add && g.Nodes[add].Inputs[0] == mul && isRow(g, g.Nodes[add].Inputs[1]) {
			f.root, f.members = add, append(f.members, add)
			f.node.Op, f.node.Inputs = ops.LayerNormMulAdd, append(f.node.Inputs, g.Nodes[add].Inputs[1])
		}
		found = append(found, f)
	}
	return applyFusions(g, c, found)
}

// isRow reports whether id is a single row broadcast over a matrix.
func isRow(g *graph.Graph, id int) bool {
	s := g.Nodes[id].Type.Shape
	return len(s) == 1 || (len(s) == 2 && s[0] == graph.D(1))
}

// fuseResidual folds an Add of a matmul's product and a same-shaped value
// into the matmul.
func fuseResidual(g *graph.Graph, c Config) (Change, error) {
	users := g.Users()
	var found []fusion
	for _, n := range g.Nodes {
		if n.Op != ops.Add || n.Inputs[0] == n.Inputs[1] {
			continue
		}
		for side := 0; side < 2; side++ {
			mm, res := n.Inputs[side], n.Inputs[1-side]
			m := op(g, mm, ops.MatMul)
			if m == nil || single(g, users, mm) != n.ID || !g.Nodes[res].Type.Shape.Equal(n.Type.Shape) {
				continue
			}
			found = append(found, fusion{root: n.ID, members: []int{mm, n.ID}, node: &graph.Node{Op: ops.MatMulAdd, Inputs: []int{m.Inputs[0], m.Inputs[1], res}}})
			break
		}
	}
	return applyFusions(g, c, found)
}
