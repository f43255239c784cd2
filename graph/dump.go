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
	Backend string   `json:"backend"`
	Cause   string   `json:"cause"`
	Fused   []string `json:"fused,omitempty"`
	Buffer  *Buffer  `json:"buffer,omitempty"`
	Layout  *Layout  `json:"layout,omitempty"`
}

// WriteJSON prints the graph as one JSON object with "nodes", "inputs",
// "outputs" and, once planned, "arena_bytes" per backend, "memory" and
// "splits"; shapes are written as strings ("T", "288").
func WriteJSON(w io.Writer, g *Graph) error { return WriteJSONWith(w, g, nil) }

// WriteJSONWith is WriteJSON with extra top-level fields (a pass log).
func WriteJSONWith(w io.Writer, g *Graph, extra map[string]any) error {
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
			Name: n.Name, Layer: n.Layer, Tensor: n.Tensor, Attrs: n.Attrs, Backend: n.Backend, Cause: n.Cause,
			Fused: n.Fused, Buffer: n.Buffer, Layout: n.Layout}
	}
	doc := map[string]any{"nodes": nodes, "inputs": g.Inputs, "outputs": g.Outputs}
	if g.Memory != nil {
		doc["arena_bytes"], doc["memory"] = g.Memory.Arenas, g.Memory
	}
	if g.Splits != nil {
		doc["splits"] = g.Splits
	}
	for k, v := range extra {
		doc[k] = v
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(doc)
}

// dotNode adapts a Node to gonum's DOT encoder.
type dotNode struct{ n *Node }

func (d dotNode) ID() int64     { return int64(d.n.ID) }
func (d dotNode) DOTID() string { return fmt.Sprintf("n%d", d.n.ID) }

func (d dotNode) Attributes() []encoding.Attribute {
	n := d.n
	label := fmt.Sprintf("%s\\n%s %s", n.Op, n.Type.DType, n.Type.Shape)
	if n.Name != "" {
		label = n.Name + "\\n" + label
	}
	if n.Backend != "" {
		label += "\\n@" + n.Backend
	}
	attrs := []encoding.Attribute{
		{Key: "shape", Value: "box"},
		{Key: "style", Value: "filled"},
		{Key: "fillcolor", Value: `"` + opColor(n.Op) + `"`},
	}
	if len(n.Fused) > 0 {
		label += fmt.Sprintf("\\nfused %d", len(n.Fused))
		attrs = append(attrs, encoding.Attribute{Key: "peripheries", Value: "2"}, encoding.Attribute{Key: "penwidth", Value: "2"})
	}
	attrs = append(attrs, encoding.Attribute{Key: "label", Value: quoteDOT(label)})
	if n.Backend != "" {
		attrs = append(attrs, encoding.Attribute{Key: "color", Value: `"` + BackendColor(n.Backend) + `"`},
			encoding.Attribute{Key: "tooltip", Value: quoteDOT("backend " + n.Backend + ": " + n.Cause)})
	}
	return attrs
}

func quoteDOT(s string) string { return `"` + strings.ReplaceAll(s, `"`, `'`) + `"` }

// BackendColor gives each backend a stable outline colour.
func BackendColor(name string) string {
	switch name {
	case "":
		return "#999999"
	case "cpu":
		return "#3182bd"
	case "vulkan", "gpu":
		return "#e6550d"
	}
	h := 0
	for _, c := range name {
		h = h*31 + int(c)
	}
	palette := []string{"#31a354", "#756bb1", "#636363", "#d6616b"}
	return palette[(h%len(palette)+len(palette))%len(palette)]
}

// opColor groups ops into families for the pictures.
func opColor(op string) string {
	switch {
	case op == "Input":
		return "#dddddd"
	case op == "Weight":
		return "#f5e6c8"
	case strings.HasPrefix(op, "MatMul") || op == "Dequantize":
		return "#9ecae1"
	case op == "Part" || op == "Copy" || op == "SelectRows" || op == "GetRows":
		return "#e5e5e5"
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
