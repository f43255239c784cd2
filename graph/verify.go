package graph

import (
	"errors"
	"fmt"
	"sort"

	gonum "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// Verify checks that every node is well formed: IDs match positions, inputs
// exist, the graph is acyclic, every op is registered and each node's stored
// type equals the type its op infers from its inputs.
func (g *Graph) Verify() error {
	for i, n := range g.Nodes {
		if n == nil || n.ID != i {
			return fmt.Errorf("node at index %d has ID mismatch", i)
		}
		for j, in := range n.Inputs {
			if g.Node(in) == nil {
				return fmt.Errorf("node %d (%s %q): input %d refers to missing node %d", n.ID, n.Op, n.Name, j, in)
			}
		}
	}
	if _, err := g.TopoOrder(); err != nil {
		return err
	}
	for _, n := range g.Nodes {
		if err := g.checkType(n); err != nil {
			return fmt.Errorf("node %d (%s %q, layer %d): %w", n.ID, n.Op, n.Name, n.Layer, err)
		}
	}
	for name, id := range g.Outputs {
		if g.Node(id) == nil {
			return fmt.Errorf("output %q refers to missing node %d", name, id)
		}
	}
	return nil
}

func (g *Graph) checkType(n *Node) error {
	def, ok := Lookup(n.Op)
	if !ok {
		return errors.New("unknown op")
	}
	if n.Op == "Input" || n.Op == "Weight" {
		return nil
	}
	in := make([]Type, len(n.Inputs))
	for i, id := range n.Inputs {
		in[i] = g.Nodes[id].Type
	}
	if def.Arity >= 0 && len(in) != def.Arity {
		return fmt.Errorf("takes %d inputs, got %d", def.Arity, len(in))
	}
	t, err := def.Infer(in, n.Attrs)
	if err != nil {
		return err
	}
	if t.DType != n.Type.DType || !t.Shape.Equal(n.Type.Shape) {
		return fmt.Errorf("stored type %s, inferred %s", n.Type, t)
	}
	return nil
}

// TopoOrder returns node IDs so that every node follows its inputs; among
// ready nodes the lowest ID comes first, so the order is stable. It fails
// on a cycle.
func (g *Graph) TopoOrder() ([]int, error) {
	dg := simple.NewDirectedGraph()
	for _, n := range g.Nodes {
		dg.AddNode(simple.Node(n.ID))
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in == n.ID {
				return nil, fmt.Errorf("node %d (%s %q) uses itself", n.ID, n.Op, n.Name)
			}
			if !dg.HasEdgeFromTo(int64(in), int64(n.ID)) {
				dg.SetEdge(dg.NewEdge(simple.Node(in), simple.Node(n.ID)))
			}
		}
	}
	sorted, err := topo.SortStabilized(dg, func(ns []gonum.Node) {
		sort.Slice(ns, func(i, j int) bool { return ns[i].ID() < ns[j].ID() })
	})
	if err != nil {
		return nil, fmt.Errorf("graph has a cycle: %v", err)
	}
	order := make([]int, len(sorted))
	for i, n := range sorted {
		order[i] = int(n.ID())
	}
	return order, nil
}

// Users returns, for every node, the IDs of the nodes that read it.
func (g *Graph) Users() [][]int {
	users := make([][]int, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			users[in] = append(users[in], n.ID)
		}
	}
	return users
}
