//go:build linux && (amd64 || arm64)

package vulkan

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
)

// A profiled Program writes a GPU timestamp before its first dispatch and
// after each labelled span of dispatches (Stamp); after each Run the
// spans' device times are read back. Timestamps serialise nothing that
// the barriers between nodes do not already, so the profile is the
// steady-state cost of each node, dispatch and barrier included.

// profile is a Program's timestamp query pool.
type profile struct {
	pool   vk.QueryPool
	labels []string // span i ends at query i+1
	nodes  []int    // span i's graph node; -1 until StampNode names it
}

// maxStamps bounds the spans of one profiled Program.
const maxStamps = 4096

// Profile starts timing the Program: call it right after NewProgram.
func (p *Program) Profile() error {
	if p.err != nil {
		return p.err
	}
	pool, err := p.d.dev.CreateTimestampQueryPool(maxStamps)
	if err != nil {
		return p.fail(err)
	}
	p.prof = &profile{pool: pool}
	p.d.dev.CmdResetQueryPool(p.cb, pool, 0, maxStamps)
	p.d.dev.CmdWriteTimestamp(p.cb, vk.StageComputeShader, pool, 0)
	return nil
}

// Stamp ends a span called label: the dispatches recorded since the last
// Stamp (or Profile). It does nothing on a Program not profiled.
func (p *Program) Stamp(label string) { p.stamp(-1, label) }

// StampNode is Stamp for the span that ends graph node node's
// dispatches; the spans Stamp ended since the previous StampNode (the
// node's own preparatory dispatches) are the node's too.
func (p *Program) StampNode(node int, label string) {
	if !p.stamp(node, label) {
		return
	}
	n := p.prof.nodes
	for i := len(n) - 2; i >= 0 && n[i] < 0; i-- {
		n[i] = node
	}
}

func (p *Program) stamp(node int, label string) bool {
	if p.prof == nil || p.err != nil || len(p.prof.labels)+1 >= maxStamps {
		return false
	}
	p.prof.labels = append(p.prof.labels, label)
	p.prof.nodes = append(p.prof.nodes, node)
	p.d.dev.CmdWriteTimestamp(p.cb, vk.StageComputeShader, p.prof.pool, uint32(len(p.prof.labels)))
	return true
}

// Spans returns the device time of each span of the last Run, in order,
// with its label.
func (p *Program) Spans() ([]string, []time.Duration, error) {
	if p.prof == nil || len(p.prof.labels) == 0 {
		return nil, nil, nil
	}
	ticks, err := p.d.dev.TimestampResults(p.prof.pool, 0, uint32(len(p.prof.labels)+1))
	if err != nil {
		return nil, nil, err
	}
	period := float64(p.d.props.Limits.TimestampPeriod)
	out := make([]time.Duration, len(p.prof.labels))
	for i := range out {
		out[i] = time.Duration(float64(ticks[i+1]-ticks[i]) * period)
	}
	return p.prof.labels, out, nil
}

// SpanNodes returns the graph node of each span (as Spans orders them):
// -1 for a span no StampNode followed.
func (p *Program) SpanNodes() []int {
	if p.prof == nil {
		return nil
	}
	return p.prof.nodes
}

// Profiler sums the spans of many runs by batch size (tokens per step):
// a Session's per-node profile (StartProfile, or WEFT_VULKAN_PROFILE=1).
type Profiler struct {
	// print makes the session print the profile on stderr when it closes
	// (ProfileEnv).
	print bool
	steps map[int]*stepProfile
}

type stepProfile struct {
	steps, dispatches, barriers, submits int
	total                                time.Duration
	spans                                backends.SpanSet
}

// Add records one run of p, a step of tokens tokens.
func (f *Profiler) Add(tokens int, p *Program, submits int) error {
	labels, times, err := p.Spans()
	if err != nil || labels == nil {
		return err
	}
	if f.steps == nil {
		f.steps = map[int]*stepProfile{}
	}
	ph := f.steps[tokens]
	if ph == nil {
		ph = &stepProfile{}
		f.steps[tokens] = ph
	}
	ph.steps++
	ph.dispatches += p.Dispatches()
	ph.barriers += p.Barriers()
	ph.submits += submits
	nodes := p.SpanNodes()
	for i, l := range labels {
		ph.spans.Add(nodes[i], l, times[i])
		ph.total += times[i]
	}
	return nil
}

// Profile returns the sums by batch size, smallest first
// (backends.Profiler).
func (f *Profiler) Profile() []backends.StepProfile {
	var out []backends.StepProfile
	for tokens, ph := range f.steps {
		out = append(out, backends.StepProfile{Tokens: tokens, Steps: ph.steps, Dispatches: ph.dispatches, Barriers: ph.barriers,
			Submits: ph.submits, Clock: "gpu", Spans: slices.Clone(ph.spans.Spans)})
	}
	slices.SortFunc(out, func(a, b backends.StepProfile) int { return a.Tokens - b.Tokens })
	return out
}

// phaseName is how Write names the steps of a batch size.
func phaseName(tokens int) string {
	if tokens == 1 {
		return "decode"
	}
	return fmt.Sprintf("batches of %d tokens", tokens)
}

// Write prints each batch size's device time per step, by label, largest
// first, with the dispatches, barriers and submits per step.
func (f *Profiler) Write(w io.Writer) {
	var sizes []int
	for tokens := range f.steps {
		sizes = append(sizes, tokens)
	}
	// "batches of N tokens" before "decode", as the names sort.
	sort.Slice(sizes, func(i, j int) bool { return phaseName(sizes[i]) < phaseName(sizes[j]) })
	for _, tokens := range sizes {
		ph := f.steps[tokens]
		steps := float64(ph.steps)
		fmt.Fprintf(w, "vulkan profile, %s: %d steps, %.1f µs device time per step; per step %.0f dispatches, %.0f barriers, %.0f submits\n",
			phaseName(tokens), ph.steps, us(ph.total)/steps, float64(ph.dispatches)/steps, float64(ph.barriers)/steps, float64(ph.submits)/steps)
		byLabel := map[string]*backends.Span{}
		var labels []string
		for _, sp := range ph.spans.Spans {
			st := byLabel[sp.Label]
			if st == nil {
				st = &backends.Span{Label: sp.Label}
				byLabel[sp.Label] = st
				labels = append(labels, sp.Label)
			}
			st.Count += sp.Count
			st.Time += sp.Time
		}
		sort.SliceStable(labels, func(i, j int) bool { return byLabel[labels[i]].Time > byLabel[labels[j]].Time })
		for _, l := range labels {
			st := byLabel[l]
			fmt.Fprintf(w, "  %-28s %9.1f µs/step %5.1f%%  %5.1f per step, %7.2f µs each\n", l, us(st.Time)/steps,
				100*float64(st.Time)/float64(max(ph.total, 1)), float64(st.Count)/steps, us(st.Time)/float64(st.Count))
		}
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// profileLabel names a node's span: its op and, for matmuls, the weight
// type and shape, so that the profile separates the matrices.
func profileLabel(v *value, g func(int) *value) string {
	n := v.n
	if !strings.HasPrefix(n.Op, "MatMul") {
		return n.Op
	}
	w := g(n.Inputs[1]).n
	return fmt.Sprintf("%s %s %dx%d", n.Op, w.Type.DType, w.Type.Shape[0].N, w.Type.Shape[1].N)
}
