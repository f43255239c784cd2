package passes

import (
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// fuseBias folds a bias row added to a matmul's product (qwen2's and
// phi2's projections, phi2's output) into one MatMulBias: each tile adds
// the bias while its products are in cache, with the same two roundings.
// It runs after fuse-qkv, which keeps q, k and v as one fused projection
// and leaves their bias adds in place.
func fuseBias(g *graph.Graph, c Config) (Change, error) {
	users := g.Users()
	var found []fusion
	for _, n := range g.Nodes {
		if mm, b, ok := biasAdd(g, users, n); ok {
			m := g.Nodes[mm]
			found = append(found, fusion{root: n.ID, members: []int{mm, n.ID}, node: &graph.Node{Op: ops.MatMulBias, Inputs: []int{m.Inputs[0], m.Inputs[1], b}}})
		}
	}
	return applyFusions(g, c, found)
}

// biasAdd matches n = Add(MatMul, b) with b a 1-D row of the product's
// width and the product read by n alone; it returns the matmul and b.
func biasAdd(g *graph.Graph, users [][]int, n *graph.Node) (mm, b int, ok bool) {
	if n.Op != ops.Add {
		return -1, -1, false
	}
	for side := 0; side < 2; side++ {
		mm, b = n.Inputs[side], n.Inputs[1-side]
		if op(g, mm, ops.MatMul) != nil && single(g, users, mm) == n.ID && len(g.Nodes[b].Type.Shape) == 1 {
			return mm, b, true
		}
	}
	return -1, -1, false
}
