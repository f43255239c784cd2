package graph

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeatColor(t *testing.T) {
	for _, c := range []struct {
		share float64
		color string
		light bool
	}{{0.5, "#800026", true}, {0.10, "#800026", true}, {0.05, "#e31a1c", true}, {0.02, "#fd8d3c", false}, {0.005, "#fed976", false}, {0.001, "#ffffcc", false}, {0, "#ffffcc", false}} {
		color, light := heatColor(c.share)
		assert.Equal(t, c.color, color, "share %g", c.share)
		assert.Equal(t, c.light, light, "share %g", c.share)
	}
}

// TestWriteHTMLHeat: timed nodes take the heat fill, their label and
// hover lines; the others are grey and say why; the legend has the title.
func TestWriteHTMLHeat(t *testing.T) {
	b := NewBuilder()
	x := b.Input("x", Type{DType: F32, Shape: S(Tokens, 8)})
	n := b.Op("RMSNorm", "norm", Attrs{"eps": 1e-5}, x)
	b.Op("RMSNorm", "norm2", Attrs{"eps": 1e-5}, n)
	g, err := b.Graph()
	require.NoError(t, err)
	heat := &Heat{Title: "decode <gpu>", Nodes: map[int]HeatNode{n: {Share: 0.2, Label: "12.0 µs 20%", Info: "profile & more"}}}
	var sb strings.Builder
	require.NoError(t, WriteHTML(&sb, []View{{Title: "plain", Graph: g}, {Title: "timed", Graph: g, Heat: heat}}))
	page := sb.String()
	assert.Contains(t, page, "<b>decode &lt;gpu&gt;</b>")
	assert.Contains(t, page, `class="node hot" data-id="1" data-info="%1 RMSNorm  norm`)
	assert.Contains(t, page, `profile &amp; more"`)
	assert.Contains(t, page, `>&lt;0.3%<`)
	assert.Contains(t, page, `fill="#800026"`)
	assert.Contains(t, page, ">12.0 µs 20%<")
	assert.Contains(t, page, `class="node untimed" data-id="2"`)
	assert.Contains(t, page, "no time of its own")
	assert.Equal(t, 1, strings.Count(page, `fill="#800026"`), "only the timed view is coloured")
}
