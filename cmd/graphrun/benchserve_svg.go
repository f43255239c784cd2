package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// seriesColours: weft first (blue), then the comparison (orange), …
var seriesColours = []string{"#3182bd", "#e6550d", "#31a354", "#756bb1"}

// benchServeSVG draws four panels over the concurrency levels: output
// and decode tokens per second, time to first token (p50) and inter-token
// latency (p50), one line per server. Self-contained: no scripts, fonts or links.
func benchServeSVG(c *benchServeConfig, results []*serverResult) string {
	const panelW, panelH, top = 360, 260, 70
	var b strings.Builder
	width := 4*panelW + 50
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, panelH+top+40, width, panelH+top+40)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="20" y="24" font-size="16">Serving load: %d-token completions, %d-word prompts, closed loop per level</text>`+"\n",
		c.maxTokens, c.promptWords)
	for i, r := range results {
		x := 20 + 200*i
		col := seriesColours[i%len(seriesColours)]
		fmt.Fprintf(&b, `<rect x="%d" y="38" width="14" height="4" fill="%s"/><text x="%d" y="44">%s</text>`+"\n", x, col, x+20, html.EscapeString(r.Label))
	}
	panels := []struct {
		title string
		value func(*levelResult) float64
	}{
		{"output tokens/s (all clients)", func(l *levelResult) float64 { return l.TokS }},
		{"decode tokens/s (all clients)", func(l *levelResult) float64 { return l.DecodeTokS }},
		{"time to first token p50 (ms)", func(l *levelResult) float64 { return l.TTFTP50 }},
		{"inter-token latency p50 (ms)", func(l *levelResult) float64 { return l.ITLP50 }},
	}
	for p, pn := range panels {
		drawPanel(&b, 20+p*(panelW+10), top, panelW, panelH, pn.title, c.concurrency, results, pn.value)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// drawPanel draws one line chart: x the levels (evenly spaced), y from 0
// to a round number above the largest value.
func drawPanel(b *strings.Builder, x0, y0, w, h int, title string, levels []int, results []*serverResult, value func(*levelResult) float64) {
	const left, bottom, right, topPad = 48, 30, 10, 24
	pw, ph := float64(w-left-right), float64(h-bottom-topPad)
	ymax := 0.0
	for _, r := range results {
		for _, lv := range r.Levels {
			ymax = math.Max(ymax, value(lv))
		}
	}
	ymax = niceCeil(ymax)
	fmt.Fprintf(b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
	fmt.Fprintf(b, `<text x="%d" y="14" font-size="13">%s</text>`+"\n", left, html.EscapeString(title))
	px := func(i int) float64 {
		if len(levels) == 1 {
			return left + pw/2
		}
		return left + pw*float64(i)/float64(len(levels)-1)
	}
	py := func(v float64) float64 { return topPad + ph*(1-v/ymax) }
	for k := 0; k <= 4; k++ {
		v := ymax * float64(k) / 4
		fmt.Fprintf(b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, left+pw, py(v), py(v), left-4, py(v)+4, axisLabel(v))
	}
	for i, n := range levels {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", px(i), topPad+ph+16, n)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">concurrent clients</text>`+"\n", left+pw/2, topPad+ph+28)
	for si, r := range results {
		col := seriesColours[si%len(seriesColours)]
		var pts []string
		for i, lv := range r.Levels {
			if lv.Requests == 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(i), py(value(lv))))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", px(i), py(value(lv)), col)
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"/>`+"\n", strings.Join(pts, " "), col)
	}
	b.WriteString("</g>\n")
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func axisLabel(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}
