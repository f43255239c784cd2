package passes

import (
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// fuseQKV turns the three projections feeding an Attention node (Q and K
// possibly through RoPE) into one MatMulQKV of their shared input, read
// back through Part nodes.
func fuseQKV(g *graph.Graph, c Config) (Change, error) {
	users := g.Users()
	var ch Change
	e := newEditor(g)
	for _, a := range g.Nodes {
		if a.Op != ops.Attention {
			continue
		}
		mms := [3]int{}
		ok := true
		for i := range mms {
			mms[i], ok = projection(g, users, a.Inputs[i])
			if !ok {
				break
			}
		}
		if !ok || !sameInput(g, mms[:]) || mms[0] == mms[1] || mms[1] == mms[2] || mms[0] == mms[2] {
			continue
		}
		if id, err := fuseParts(g, e, c, mms); err != nil {
			return ch, err
		} else if id >= 0 {
			ch.add(id, "MatMulQKV %q <- %v", g.Nodes[id].Name, g.Nodes[id].Fused)
		}
	}
	remapAll(&ch, e.finish())
	return ch, nil
}

// projection finds the MatMul behind an attention operand (through q's
// Scale, RoPE, then a bias Add) whose only reader leads there. A bias
// stays a separate Add reading the projection's Part.
func projection(g *graph.Graph, users [][]int, id int) (int, bool) {
	for _, through := range []string{ops.Scale, ops.RoPE} {
		if n := g.Nodes[id]; n.Op == through {
			if single(g, users, n.Inputs[0]) != id {
				return -1, false
			}
			id = n.Inputs[0]
		}
	}
	if mm, _, ok := biasAdd(g, users, g.Nodes[id]); ok {
		id = mm
	}
	return id, g.Nodes[id].Op == ops.MatMul
}

func sameInput(g *graph.Graph, mms []int) bool {
	for _, m := range mms[1:] {
		if g.Nodes[m].Inputs[0] != g.Nodes[mms[0]].Inputs[0] {
			return false
		}
	}
	return true
}

// fuseParts adds the MatMulQKV and one Part per projection, and makes the
// projections' readers read the parts. It returns -1 when no backend
// supports the fused node.
func fuseParts(g *graph.Graph, e *editor, c Config, mms [3]int) (int, error) {
	x := g.Nodes[mms[0]].Inputs[0]
	names := make([]string, 3)
	anchor := 0
	inputs := []int{x}
	for i, m := range mms {
		names[i], anchor = g.Nodes[m].Name, max(anchor, m)
		inputs = append(inputs, g.Nodes[m].Inputs[1])
	}
	fused := &graph.Node{Op: ops.MatMulQKV, Inputs: inputs, Name: fusedName(names...), Fused: names, Cause: "fused 3 projections of one input"}
	id, err := e.add(anchor, fused)
	if err != nil || !c.supports(fused, g) {
		return -1, err
	}
	start := 0
	for _, m := range mms {
		width := int(g.Nodes[m].Type.Shape[1].N)
		part := &graph.Node{Op: ops.Part, Inputs: []int{id}, Name: g.Nodes[m].Name,
			Attrs: graph.Attrs{"start": float64(start), "width": float64(width)}, Cause: "part of " + fused.Name}
		pid, err := e.add(anchor, part)
		if err != nil {
			return -1, err
		}
		e.replace(m, pid)
		start += width
	}
	return id, nil
}

// fuseGateUp turns silu(x·gateᵀ) * (x·upᵀ), written as SiLU then Mul or
// as SwiGLU, into one MatMulGateUpSwiGLU, and gelu(x·gateᵀ) * (x·upᵀ)
// into one MatMulGateUpGeGLU.
func fuseGateUp(g *graph.Graph, c Config) (Change, error) {
	users := g.Users()
	var found []fusion
	for _, n := range g.Nodes {
		fused, gate, up, members, ok := gateUp(g, users, n)
		if !ok || g.Nodes[gate].Inputs[0] != g.Nodes[up].Inputs[0] || gate == up {
			continue
		}
		inputs := []int{g.Nodes[gate].Inputs[0], g.Nodes[gate].Inputs[1], g.Nodes[up].Inputs[1]}
		name := fusedName(g.Nodes[gate].Name, g.Nodes[up].Name)
		found = append(found, fusion{root: n.ID, members: members, node: &graph.Node{Op: fused, Inputs: inputs, Name: name}})
	}
	return applyFusions(g, c, found)
}

// gatedActs maps an activation to the fused gate-up op that applies it.
var gatedActs = map[string]string{ops.SiLU: ops.MatMulGateUpSwiGLU, ops.GELU: ops.MatMulGateUpGeGLU}

// gateUp matches the forms at their final node n and names the fused op.
func gateUp(g *graph.Graph, users [][]int, n *graph.Node) (fused string, gate, up int, members []int, ok bool) {
	isMM := func(id, reader int) bool { return g.Nodes[id].Op == ops.MatMul && single(g, users, id) == reader }
	switch n.Op {
	case ops.SwiGLU:
		gate, up = n.Inputs[0], n.Inputs[1]
		return ops.MatMulGateUpSwiGLU, gate, up, []int{gate, up, n.ID}, isMM(gate, n.ID) && isMM(up, n.ID)
	case ops.Mul:
		for side := 0; side < 2; side++ {
			s, u := n.Inputs[side], n.Inputs[1-side]
			fused, ok := gatedActs[g.Nodes[s].Op]
			if !ok || single(g, users, s) != n.ID {
				continue
			}
			gate = g.Nodes[s].Inputs[0]
			if isMM(gate, s) && isMM(u, n.ID) {
				return fused, gate, u, []int{gate, u, s, n.ID}, true
			}
		}
	}
	return "", -1, -1, nil, false
}
