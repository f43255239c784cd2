package backends

import "github.com/weft-ml/weft/graph"

// Backend is a device that can execute graph nodes. Placement asks Supports
// for every node: decisions are made on op, types and attributes, never on
// tensor names.
type Backend interface {
	Name() string
	Supports(n *graph.Node, g *graph.Graph) bool
}
