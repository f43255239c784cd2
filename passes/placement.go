package passes

import (
	"fmt"
	"strings"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// place gives every node a backend, with its cause, then inserts a Copy
// wherever a value crosses backends and records the splits. Rules, in
// order: graph inputs live on the host; a weight is pinned to the most
// preferred backend that supports all its readers; a node reading a weight
// runs where the weight lives; other nodes follow their first computed
// input; anything else (or anything its neighbour cannot run) falls back to
// the most preferred backend that supports it.
func place(g *graph.Graph, c Config) (Change, error) {
	var ch Change
	order, err := g.TopoOrder()
	if err != nil {
		return ch, err
	}
	users := g.Users()
	count := map[string]int{}
	for _, id := range order {
		n := g.Nodes[id]
		b, cause, err := choose(g, c, users, n)
		if err != nil {
			return ch, err
		}
		if n.Backend != b {
			ch.Count++
		}
		n.Backend, n.Cause, count[b] = b, cause, count[b]+1
	}
	ch.Details = append(ch.Details, fmt.Sprintf("placed %d nodes: %v", len(order), count))
	copies, err := insertCopies(g, order)
	if err != nil {
		return ch, err
	}
	for _, id := range copies {
		ch.add(id, "Copy %q: %s", g.Nodes[id].Name, g.Nodes[id].Cause)
	}
	g.Splits = splits(g)
	ch.Details = append(ch.Details, fmt.Sprintf("%d splits", len(g.Splits)))
	return ch, nil
}

func choose(g *graph.Graph, c Config, users [][]int, n *graph.Node) (string, string, error) {
	switch n.Op {
	case ops.Copy:
		if n.Backend != "" {
			return n.Backend, n.Cause, nil
		}
	case "Input":
		return c.host().Name(), "graph input: host memory", nil
	case "Weight":
		return pinWeight(g, c, users, n)
	}
	for _, in := range n.Inputs {
		if w := g.Nodes[in]; w.Op == "Weight" && supportedBy(c, w.Backend, n, g) {
			return w.Backend, fmt.Sprintf("reads weight %s on %s", w.Name, w.Backend), nil
		}
	}
	for _, in := range n.Inputs {
		if src := g.Nodes[in]; src.Op != "Input" && src.Op != "Weight" {
			if supportedBy(c, src.Backend, n, g) {
				return src.Backend, fmt.Sprintf("follows its input %s on %s", src.Name, src.Backend), nil
			}
			return fallback(g, c, n, fmt.Sprintf("%s does not support %s", src.Backend, n.Op))
		}
	}
	return fallback(g, c, n, "no placed neighbour")
}

// pinWeight places a weight on the first backend that runs all its readers.
func pinWeight(g *graph.Graph, c Config, users [][]int, w *graph.Node) (string, string, error) {
	for _, b := range c.backends() {
		all := true
		for _, u := range users[w.ID] {
			all = all && b.Supports(g.Nodes[u], g) == nil
		}
		if all {
			return b.Name(), fmt.Sprintf("weight pinned to %s, which supports its %d reader(s)", b.Name(), len(users[w.ID])), nil
		}
	}
	return c.host().Name(), "weight kept in host memory: no backend supports all its readers", nil
}

func fallback(g *graph.Graph, c Config, n *graph.Node, why string) (string, string, error) {
	var refusals []string
	for i, b := range c.backends() {
		err := b.Supports(n, g)
		if err == nil && i == 0 {
			return b.Name(), fmt.Sprintf("preferred backend %s (%s)", b.Name(), why), nil
		}
		if err == nil {
			return b.Name(), fmt.Sprintf("fell back to %s: %s; %s", b.Name(), why, strings.Join(refusals, "; ")), nil
		}
		refusals = append(refusals, fmt.Sprintf("%s: %v", b.Name(), err))
	}
	return "", "", fmt.Errorf("node %d (%s %q): no backend supports it (%s)", n.ID, n.Op, n.Name, strings.Join(refusals, "; "))
}

func supportedBy(c Config, name string, n *graph.Node, g *graph.Graph) bool {
	b := byName(c, name)
	return b != nil && b.Supports(n, g) == nil
}

func byName(c Config, name string) backends.Backend {
	for _, b := range c.backends() {
		if b.Name() == name {
			return b
		}
	}
	return nil
}

// insertCopies adds one Copy per value and destination backend and makes
// the readers there use it.
func insertCopies(g *graph.Graph, order []int) ([]int, error) {
	e := newEditor(g)
	made := map[[2]string]int{}
	var copies []int
	for _, id := range order {
		n := g.Nodes[id]
		for i, in := range n.Inputs {
			src := g.Nodes[in]
			if src.Backend == n.Backend {
				continue
			}
			key := [2]string{fmt.Sprint(in), n.Backend}
			cp, ok := made[key]
			if !ok {
				var err error
				cp, err = e.add(in, &graph.Node{Op: ops.Copy, Inputs: []int{in}, Name: src.Name + "@" + n.Backend,
					Backend: n.Backend, Cause: fmt.Sprintf("copy from %s to %s", src.Backend, n.Backend)})
				if err != nil {
					return nil, err
				}
				made[key], copies = cp, append(copies, cp)
			}
			n.Inputs[i] = cp
		}
	}
	remap := e.finish()
	for i, id := range copies {
		copies[i] = remap[id]
	}
	return copies, nil
}

// splits cuts the execution order of computed nodes where the backend changes.
func splits(g *graph.Graph) []graph.Split {
	var out []graph.Split
	for _, n := range g.Nodes { // compact left the nodes in execution order
		if n.Op == "Input" || n.Op == "Weight" {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Backend != n.Backend {
			out = append(out, graph.Split{Backend: n.Backend})
		}
		out[len(out)-1].Nodes = append(out[len(out)-1].Nodes, n.ID)
	}
	return out
}
