package graph

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The HTML view's legend names every backend its nodes are placed on, and
// each node's tooltip says where it runs and why.
func TestHTMLLegendNamesPlacedBackends(t *testing.T) {
	g := &Graph{Nodes: []*Node{
		{ID: 0, Op: "Input", Name: "tokens", Backend: "cpu", Cause: "graph input: host memory"},
		{ID: 1, Op: "Copy", Name: "tokens@vulkan", Inputs: []int{0}, Backend: "vulkan", Cause: "copy from cpu to vulkan"},
	}}
	var b strings.Builder
	require.NoError(t, WriteHTML(&b, []View{{Title: "plan", Graph: g}}))
	out := b.String()
	assert.Contains(t, out, ">cpu</span>")
	assert.Contains(t, out, ">vulkan</span>")
	assert.NotContains(t, out, ">gpu</span>")
	assert.Contains(t, out, "backend vulkan: copy from cpu to vulkan")
}
