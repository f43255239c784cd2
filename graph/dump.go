package graph

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"
)

// WriteText prints one line per node in topological order:
// id, op, dtype, shape, inputs, name, layer.
func WriteText(w io.Writer, g *Graph) error {
	order, err := g.TopoOrder()
	if err != nil {
		return err
	}
	for _, id := range order {
		n := g.Nodes[id]
		ins := make([]string, len(n.Inputs))
		for i, in := range n.Inputs {
			ins[i] = fmt.Sprintf("%%%d", in)
		}
		line := fmt.Sprintf("%%%-4d %-10s %-5s %-14s (%s) %s", n.ID, n.Op, n.Type.DType, n.Type.Shape, strings.Join(ins, ", "), n.Name)
		if n.Layer >= 0 {
			line += fmt.Sprintf(" layer=%d", n.Layer)
		}
		if n.Backend != "" {
			line += " backend=" + n.Backend
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return writeOutputs(w, g)
}

func writeOutputs(w io.Writer, g *Graph) error {
	names := make([]string, 0, len(g.Outputs))
	for name := range g.Outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := fmt.Fprintf(w, "output %s = %%%d\n", name, g.Outputs[name]); err != nil {
			return err
		}
	}
	return nil
}

// jsonNode is the stable JSON view of a node for tools.
type jsonNode struct {
	ID      int      `json:"id"`
	Op      string   `json:"op"`
	Inputs  []int    `json:"inputs"`
	Shape   []string `json:"shape"`
	DType   string   `json:"dtype"`
	Name    string   `json:"name,omitempty"`
	Layer   int      `json:"layer"`
	Tensor  string   `json:"tensor,omitempty"`
	Attrs   Attrs    `json:"attrs,omitempty"`
	Backend string   `json:"backend,omitempty"`
	Cause   string   `json:"cause,omitempty"`
}

// WriteJSON prints the graph as one JSON object with "nodes", "inputs" and
// "outputs"; shapes are written as strings ("T", "288").
func WriteJSON(w io.Writer, g *Graph) error {
	nodes := make([]jsonNode, len(g.Nodes))
	for i, n := range g.Nodes {
		shape := make([]string, len(n.Type.Shape))
		for j, d := range n.Type.Shape {
			shape[j] = d.String()
		}
		ins := n.Inputs
		if ins == nil {
			ins = []int{}
		}
		nodes[i] = jsonNode{ID: n.ID, Op: n.Op, Inputs: ins, Shape: shape, DType: n.Type.DType.String(),
			Name: n.Name, Layer: n.Layer, Tensor: n.Tensor, Attrs: n.Attrs, Backend: n.Backend, Cause: n.Cause}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(map[string]any{"nodes": nodes, "inputs": g.Inputs, "outputs": g.Outputs})
}

// dotNode adapts a Node to gonum's DOT encoder.
type dotNode struct{ n *Node }

func (d dotNode) ID() int64     { return int64(d.n.ID) }
func (d dotNode) DOTID() string { return fmt.Sprintf("n%d", d.n.ID) }

func (d dotNode) Attributes() []encoding.Attribute {
	label := fmt.Sprintf("%s\\n%s %s", d.n.Op, d.n.Type.DType, d.n.Type.Shape)
	if d.n.Name != "" {
		label = d.n.Name + "\\n" + label
	}
	attrs := []encoding.Attribute{
		{Key: "label", Value: `"` + strings.ReplaceAll(label, `"`, `'`) + `"`},
		{Key: "shape", Value: "box"},
		{Key: "style", Value: "filled"},
		{Key: "fillcolor", Value: `"` + opColor(d.n.Op) + `"`},
	}
	if d.n.Backend != "" {
		attrs = append(attrs, encoding.Attribute{Key: "tooltip", Value: `"backend ` + d.n.Backend + `: ` + d.n.Cause + `"`})
	}
	return attrs
}

// opColor groups ops into families for the pictures.
func opColor(op string) string {
	switch {
	case op == "Input":
		return "#dddddd"
	case op == "Weight":
		return "#f5e6c8"
	case strings.HasPrefix(op, "MatMul"):
		return "#9ecae1"
	case strings.Contains(op, "Norm"):
		return "#c7e9c0"
	case op == "Attention" || op == "RoPE":
		return "#fdae6b"
	}
	return "#ffffff"
}

// WriteDOT prints the graph in Graphviz DOT, one box per node.
func WriteDOT(w io.Writer, g *Graph) error {
	dg := simple.NewDirectedGraph()
	for _, n := range g.Nodes {
		dg.AddNode(dotNode{n})
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != n.ID && !dg.HasEdgeFromTo(int64(in), int64(n.ID)) {
				dg.SetEdge(simple.Edge{F: dg.Node(int64(in)), T: dg.Node(int64(n.ID))})
			}
		}
	}
	b, err := dot.Marshal(dg, "weft", "", " ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
