package graph

import "maps"

// Clone returns a deep copy of g, so a snapshot survives later rewrites.
func (g *Graph) Clone() *Graph {
	c := &Graph{Inputs: maps.Clone(g.Inputs), Outputs: maps.Clone(g.Outputs), Nodes: make([]*Node, len(g.Nodes))}
	for i, n := range g.Nodes {
		m := *n
		m.Inputs = append([]int(nil), n.Inputs...)
		m.Attrs = maps.Clone(n.Attrs)
		m.Type.Shape = append(Shape(nil), n.Type.Shape...)
		m.Fused = append([]string(nil), n.Fused...)
		if n.Buffer != nil {
			b := *n.Buffer
			m.Buffer = &b
		}
		if n.Layout != nil {
			l := *n.Layout
			m.Layout = &l
		}
		c.Nodes[i] = &m
	}
	if g.Memory != nil {
		mem := *g.Memory
		mem.Arenas = maps.Clone(g.Memory.Arenas)
		c.Memory = &mem
	}
	for _, s := range g.Splits {
		c.Splits = append(c.Splits, Split{Backend: s.Backend, Nodes: append([]int(nil), s.Nodes...)})
	}
	return c
}
