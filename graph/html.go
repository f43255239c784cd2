package graph

import (
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
)

// View is one graph shown by WriteHTML, with a title ("before fuse-qkv")
// and, optionally, measured times to colour its nodes by.
type View struct {
	Title string
	Graph *Graph
	Heat  *Heat
}

// Heat colours a View's nodes by their share of a step's measured time
// (graphc dump --profile): the fill goes from pale yellow to dark red in
// five bins, a node without a measurement is grey, and the hover text
// gains the node's Info.
type Heat struct {
	Title string           // the legend's heading, e.g. "decode, GPU time: 3021 µs per token"
	Nodes map[int]HeatNode // by node ID
}

// HeatNode is one node's measurement.
type HeatNode struct {
	Share float64 // of the step's time, 0 to 1
	Label string  // the box's second line, e.g. "312 µs 14.2%"
	Info  string  // lines added to the hover text
}

// heatBins are the fill colours by share, largest first.
var heatBins = []struct {
	min          float64
	color, label string
}{
	{0.10, "#800026", "≥10%"},
	{0.03, "#e31a1c", "3–10%"},
	{0.01, "#fd8d3c", "1–3%"},
	{0.003, "#fed976", "0.3–1%"},
	{0, "#ffffcc", "<0.3%"},
}

// untimedColor fills a node a Heat has no measurement of.
const untimedColor = "#d9d9d9"

// heatColor is the fill of a node with share of the time, and whether
// its text should be light.
func heatColor(share float64) (string, bool) {
	for i, b := range heatBins {
		if share >= b.min {
			return b.color, i < 2
		}
	}
	return heatBins[len(heatBins)-1].color, false
}

// Layout of the HTML drawing, in SVG units.
const (
	boxW, boxH = 150, 34
	colGap     = 28
	rowGap     = 12
	bandGap    = 26
	labelW     = 70
)

// WriteHTML writes one self-contained page (no network, inline script)
// drawing each view: computed nodes in one band per layer, left to right
// in dependency order; fill by op family, outline by backend, fused nodes
// with a thick double outline. Hovering a node shows its type, buffer,
// placement cause and fused members. With two views the page shows them
// side by side, with buttons to show either alone.
func WriteHTML(w io.Writer, views []View) error {
	var b strings.Builder
	b.WriteString(htmlHead)
	b.WriteString(`<div id="bar">`)
	for i, v := range views {
		fmt.Fprintf(&b, `<button onclick="show(%d)">%s</button>`, i, html.EscapeString(v.Title))
	}
	if len(views) > 1 {
		b.WriteString(`<button onclick="show(-1)">side by side</button>`)
	}
	b.WriteString(legend(views) + `</div><div id="views">`)
	for i, v := range views {
		fmt.Fprintf(&b, `<div class="view" id="v%d"><h2>%s</h2>`, i, html.EscapeString(v.Title))
		if err := drawSVG(&b, v.Graph, v.Heat); err != nil {
			return err
		}
		b.WriteString(`</div>`)
	}
	b.WriteString(`</div><div id="tip"></div>` + htmlScript + `</body></html>`)
	_, err := io.WriteString(w, b.String())
	return err
}

// placed is a node's position in the drawing.
type placed struct{ x, y int }

// layoutGraph assigns each computed node a band (its layer, with bands for
// the nodes before and after the layers) and, within the band, a column
// by dependency depth and a row among nodes of equal depth.
func layoutGraph(g *Graph) (map[int]placed, []string, []int, error) {
	order, err := g.TopoOrder()
	if err != nil {
		return nil, nil, nil, err
	}
	bandOf, names := bands(g, order)
	depth := map[int]int{}
	rows := map[[2]int]int{} // band, depth -> nodes so far
	height := make([]int, len(names))
	pos := map[int]placed{}
	for _, id := range order {
		n := g.Nodes[id]
		if !drawn(n) {
			continue
		}
		d := 0
		for _, in := range n.Inputs {
			if drawn(g.Nodes[in]) && bandOf[in] == bandOf[id] {
				d = max(d, depth[in]+1)
			}
		}
		depth[id] = d
		k := [2]int{bandOf[id], d}
		pos[id] = placed{x: d, y: rows[k]}
		rows[k]++
		height[bandOf[id]] = max(height[bandOf[id]], rows[k])
	}
	top := make([]int, len(names)+1)
	for i, h := range height {
		top[i+1] = top[i] + h*(boxH+rowGap) + bandGap
	}
	for id, p := range pos {
		pos[id] = placed{x: labelW + p.x*(boxW+colGap), y: top[bandOf[id]] + p.y*(boxH+rowGap) + bandGap/2}
	}
	return pos, names, top, nil
}

func drawn(n *Node) bool { return n.Op != "Input" && n.Op != "Weight" }

// bands maps nodes to bands: "in" before the first layer, one per layer,
// "out" after.
func bands(g *Graph, order []int) (map[int]int, []string) {
	maxLayer := -1
	for _, n := range g.Nodes {
		maxLayer = max(maxLayer, n.Layer)
	}
	names := []string{"in"}
	for l := 0; l <= maxLayer; l++ {
		names = append(names, fmt.Sprintf("layer %d", l))
	}
	names = append(names, "out")
	band := map[int]int{}
	seenLayer := false
	for _, id := range order {
		n := g.Nodes[id]
		switch {
		case n.Layer >= 0:
			band[id], seenLayer = n.Layer+1, true
		case seenLayer:
			band[id] = len(names) - 1
		default:
			band[id] = 0
		}
	}
	return band, names
}

func drawSVG(b *strings.Builder, g *Graph, heat *Heat) error {
	pos, names, top, err := layoutGraph(g)
	if err != nil {
		return err
	}
	width := labelW
	for _, p := range pos {
		width = max(width, p.x+boxW+colGap)
	}
	fmt.Fprintf(b, `<svg viewBox="0 0 %d %d" width="%d" xmlns="http://www.w3.org/2000/svg">`, width, top[len(top)-1], width)
	for i, name := range names {
		fmt.Fprintf(b, `<rect class="band" x="0" y="%d" width="%d" height="%d"/><text class="bandlabel" x="6" y="%d">%s</text>`,
			top[i], width, top[i+1]-top[i]-4, top[i]+18, name)
	}
	for _, n := range g.Nodes {
		to, ok := pos[n.ID]
		for _, in := range n.Inputs {
			if from, ok2 := pos[in]; ok && ok2 {
				fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`, from.x+boxW, from.y+boxH/2, to.x, to.y+boxH/2)
			}
		}
	}
	for _, n := range g.Nodes {
		if p, ok := pos[n.ID]; ok {
			drawNode(b, g, n, p, heat)
		}
	}
	b.WriteString(`</svg>`)
	return nil
}

func drawNode(b *strings.Builder, g *Graph, n *Node, p placed, heat *Heat) {
	class := "node"
	if len(n.Fused) > 0 {
		class += " fused"
	}
	fill, info, sub := opColor(n.Op), nodeInfo(g, n), shortName(n.Name)+" "+n.Type.Shape.String()
	if heat != nil {
		h, ok := heat.Nodes[n.ID]
		switch {
		case ok:
			var light bool
			fill, light = heatColor(h.Share)
			if light {
				class += " hot"
			}
			info += "\n" + h.Info
			sub = h.Label
		default:
			fill, info = untimedColor, info+"\nno time of its own (a view, or computed by another node's dispatch)"
			class += " untimed"
		}
	}
	fmt.Fprintf(b, `<g class="%s" data-id="%d" data-info="%s"><rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="%s" stroke="%s"/>`,
		class, n.ID, html.EscapeString(info), p.x, p.y, boxW, boxH, fill, BackendColor(n.Backend))
	label := n.Op
	if len(n.Fused) > 0 {
		label = "★ " + label
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" class="op">%s</text><text x="%d" y="%d" class="sub">%s</text></g>`,
		p.x+5, p.y+14, html.EscapeString(clip(label, 24)), p.x+5, p.y+28, html.EscapeString(clip(sub, 28)))
}

// nodeInfo is the hover text of a node.
func nodeInfo(g *Graph, n *Node) string {
	lines := []string{fmt.Sprintf("%%%d %s  %s", n.ID, n.Op, n.Name), "type " + n.Type.String()}
	if n.Buffer != nil {
		view := ""
		if n.Buffer.View {
			view = " (view)"
		}
		lines = append(lines, fmt.Sprintf("buffer offset %d, %d bytes%s", n.Buffer.Offset, n.Buffer.Size, view))
	}
	if n.Backend != "" {
		lines = append(lines, "backend "+n.Backend+": "+n.Cause)
	}
	if len(n.Fused) > 0 {
		lines = append(lines, "fuses "+strings.Join(n.Fused, ", "))
	}
	for _, in := range n.Inputs {
		if src := g.Nodes[in]; !drawn(src) {
			lines = append(lines, fmt.Sprintf("reads %s %s %s", src.Op, src.Name, src.Type))
		}
	}
	return strings.Join(lines, "\n")
}

func shortName(name string) string {
	if i := strings.Index(name, "."); strings.HasPrefix(name, "blk.") && i >= 0 {
		if j := strings.Index(name[i+1:], "."); j >= 0 {
			return name[i+j+2:]
		}
	}
	return name
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// legend names the op colours and the border colour of each backend the
// views place nodes on (cpu always).
func legend(views []View) string {
	var b strings.Builder
	b.WriteString(`<span class="legend">`)
	for _, op := range []string{"MatMul", "RMSNorm", "Attention", "Mul", "Part"} {
		fmt.Fprintf(&b, `<span style="background:%s">%s</span>`, opColor(op), op)
	}
	placed := map[string]bool{"cpu": true}
	for _, v := range views {
		for _, n := range v.Graph.Nodes {
			if n.Backend != "" {
				placed[n.Backend] = true
			}
		}
	}
	names := make([]string, 0, len(placed))
	for name := range placed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, `<span style="border:2px solid %s">%s</span>`, BackendColor(name), html.EscapeString(name))
	}
	b.WriteString(`<span class="lf">★ fused</span></span>`)
	for _, v := range views {
		if v.Heat == nil {
			continue
		}
		fmt.Fprintf(&b, `<span class="legend heat"><b>%s</b>`, html.EscapeString(v.Heat.Title))
		for _, bin := range heatBins {
			_, light := heatColor(bin.min)
			style := ""
			if light {
				style = ";color:#fff"
			}
			fmt.Fprintf(&b, `<span style="background:%s%s">%s</span>`, bin.color, style, html.EscapeString(bin.label))
		}
		fmt.Fprintf(&b, `<span style="background:%s">untimed</span></span>`, untimedColor)
		break // one heat legend: graphc gives one view a Heat
	}
	return b.String()
}

const htmlHead = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>weft graph</title><style>
body{font:13px sans-serif;margin:8px;background:#fafafa}
#bar button{margin-right:6px}
.legend span{margin-left:8px;padding:1px 5px;border:1px solid #999}
#views{display:flex;gap:12px;align-items:flex-start}
.view{flex:1;min-width:0;background:#fff;border:1px solid #ccc}
.view h2{font-size:14px;margin:4px 8px}
svg{width:100%;height:auto}
.band{fill:#f3f3f3;stroke:none}
.bandlabel{font:bold 12px sans-serif;fill:#666}
line{stroke:#888;stroke-width:1}
.node rect{stroke-width:2}
.node.fused rect{stroke-width:5;stroke-dasharray:none;filter:drop-shadow(0 0 2px #000)}
.node text.op{font:bold 11px sans-serif}
.node text.sub{font:10px sans-serif;fill:#333}
.node:hover rect{stroke:#000}
.node.hot text{fill:#fff}
.node.picked rect{stroke:#000;stroke-width:4}
.legend.heat{display:block;margin-top:4px}
#tip{position:fixed;display:none;white-space:pre;background:#ffe;border:1px solid #333;padding:4px;font:12px monospace;pointer-events:none}
</style></head><body>`

const htmlScript = `<script>
function show(i){document.querySelectorAll('.view').forEach(function(v,j){v.style.display=(i<0||i===j)?'':'none'})}
var tip=document.getElementById('tip');
document.querySelectorAll('.node').forEach(function(n){
 n.addEventListener('mousemove',function(e){tip.textContent=n.getAttribute('data-info');tip.style.display='block';tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px'});
 n.addEventListener('mouseleave',function(){tip.style.display='none'});
});
// #node=ID picks node ID of the last view: outlined, scrolled to, its
// hover text shown beside it (a link to one node of the page).
function pick(){
 var m=/^#node=(\d+)$/.exec(location.hash);if(!m)return;
 var vs=document.querySelectorAll('.view'),n=vs[vs.length-1].querySelector('.node[data-id="'+m[1]+'"]');if(!n)return;
 document.querySelectorAll('.picked').forEach(function(p){p.classList.remove('picked')});
 n.classList.add('picked');n.scrollIntoView({block:'center',inline:'center'});
 var r=n.getBoundingClientRect();tip.textContent=n.getAttribute('data-info');tip.style.display='block';
 var x=r.right+8;if(x+tip.offsetWidth>innerWidth)x=Math.max(0,r.left-tip.offsetWidth-8);
 tip.style.left=x+'px';tip.style.top=r.top+'px';
}
window.addEventListener('hashchange',pick);pick();
</script>`
