package passes

import (
	"container/heap"
	"fmt"

	"github.com/weft-ml/weft/graph"
)

// editor appends new nodes to a graph and redirects uses; finish then drops
// dead nodes and renumbers the rest in execution order, each new node
// taking the place of its anchor so the order stays close to the original.
type editor struct {
	g     *graph.Graph
	rank  map[int]float64
	seq   int
	moved map[int]int // replaced node -> its replacement
}

func newEditor(g *graph.Graph) *editor {
	return &editor{g: g, rank: map[int]float64{}, moved: map[int]int{}}
}

// resolve follows replacements, so a node made after a rewrite reads the
// rewritten value.
func (e *editor) resolve(id int) int {
	for {
		to, ok := e.moved[id]
		if !ok {
			return id
		}
		id = to
	}
}

// add appends n after node anchor, inferring its type; it takes the
// anchor's layer.
func (e *editor) add(anchor int, n *graph.Node) (int, error) {
	def, ok := graph.Lookup(n.Op)
	if !ok {
		return -1, fmt.Errorf("unknown op %s", n.Op)
	}
	in := make([]graph.Type, len(n.Inputs))
	for i, id := range n.Inputs {
		n.Inputs[i] = e.resolve(id)
		in[i] = e.g.Nodes[n.Inputs[i]].Type
	}
	t, err := def.Infer(in, n.Attrs)
	if err != nil {
		return -1, fmt.Errorf("%s %q: %w", n.Op, n.Name, err)
	}
	n.Type, n.ID, n.Layer = t, len(e.g.Nodes), e.g.Nodes[anchor].Layer
	e.seq++
	e.rank[n.ID] = e.rankOf(anchor) + float64(e.seq)/(1<<24)
	e.g.Nodes = append(e.g.Nodes, n)
	return n.ID, nil
}

func (e *editor) rankOf(id int) float64 {
	if r, ok := e.rank[id]; ok {
		return r
	}
	return float64(id)
}

// replace makes every reader of old (and any output naming it) read new.
func (e *editor) replace(old, new int) {
	e.moved[old] = new
	for _, n := range e.g.Nodes {
		if n.ID == new {
			continue
		}
		for i, in := range n.Inputs {
			if in == old {
				n.Inputs[i] = new
			}
		}
	}
	for name, id := range e.g.Outputs {
		if id == old {
			e.g.Outputs[name] = new
		}
	}
}

// finish compacts the graph; it returns each old ID's new ID (-1: removed).
func (e *editor) finish() []int { return compact(e.g, e.rankOf) }

// live marks the nodes the outputs depend on, plus the graph inputs.
func live(g *graph.Graph) []bool {
	keep := make([]bool, len(g.Nodes))
	var stack []int
	for _, id := range g.Outputs {
		stack = append(stack, id)
	}
	for _, id := range g.Inputs {
		stack = append(stack, id)
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if keep[id] {
			continue
		}
		keep[id] = true
		stack = append(stack, g.Nodes[id].Inputs...)
	}
	return keep
}

// compact removes dead nodes and renumbers the live ones in a topological
// order that, among ready nodes, takes the lowest rank first.
func compact(g *graph.Graph, rank func(int) float64) []int {
	keep := live(g)
	pending := make([]int, len(g.Nodes))
	users := g.Users()
	ready := &rankHeap{rank: rank}
	for _, n := range g.Nodes {
		if !keep[n.ID] {
			continue
		}
		pending[n.ID] = len(n.Inputs)
		if pending[n.ID] == 0 {
			heap.Push(ready, n.ID)
		}
	}
	remap := make([]int, len(g.Nodes))
	for i := range remap {
		remap[i] = -1
	}
	var nodes []*graph.Node
	for ready.Len() > 0 {
		id := heap.Pop(ready).(int)
		remap[id] = len(nodes)
		nodes = append(nodes, g.Nodes[id])
		for _, u := range users[id] {
			if keep[u] {
				if pending[u]--; pending[u] == 0 {
					heap.Push(ready, u)
				}
			}
		}
	}
	for _, n := range nodes {
		n.ID = remap[n.ID]
		for i, in := range n.Inputs {
			n.Inputs[i] = remap[in]
		}
	}
	g.Nodes = nodes
	for name, id := range g.Outputs {
		g.Outputs[name] = remap[id]
	}
	for name, id := range g.Inputs {
		g.Inputs[name] = remap[id]
	}
	g.Splits = nil
	return remap
}

type rankHeap struct {
	ids  []int
	rank func(int) float64
}

func (h *rankHeap) Len() int           { return len(h.ids) }
func (h *rankHeap) Less(i, j int) bool { return h.rank(h.ids[i]) < h.rank(h.ids[j]) }
func (h *rankHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *rankHeap) Push(x any)         { h.ids = append(h.ids, x.(int)) }
func (h *rankHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}

// single returns the only reader of id, or -1 when it has none, several,
// or is a graph output.
func single(g *graph.Graph, users [][]int, id int) int {
	for _, out := range g.Outputs {
		if out == id {
			return -1
		}
	}
	if len(users[id]) != 1 {
		return -1
	}
	return users[id][0]
}

// remapAll translates the IDs a change recorded through a compaction.
func remapAll(c *Change, remap []int) {
	kept := c.Nodes[:0]
	for _, id := range c.Nodes {
		if id < len(remap) && remap[id] >= 0 {
			kept = append(kept, remap[id])
		}
	}
	c.Nodes = kept
}
