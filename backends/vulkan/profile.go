//go:build linux && (amd64 || arm64)

package vulkan

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

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
func (p *Program) Stamp(label string) {
	if p.prof == nil || p.err != nil || len(p.prof.labels)+1 >= maxStamps {
		return
	}
	p.prof.labels = append(p.prof.labels, label)
	p.d.dev.CmdWriteTimestamp(p.cb, vk.StageComputeShader, p.prof.pool, uint32(len(p.prof.labels)))
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

// Profiler sums the spans of many runs by phase and label.
type Profiler struct {
	phases map[string]*phaseProfile
}

type phaseProfile struct {
	steps, dispatches, barriers, submits int
	total                                time.Duration
	byLabel                              map[string]*spanStat
}

type spanStat struct {
	n     int
	total time.Duration
}

// Add records one run of p in phase (e.g. "decode", "prefill").
func (f *Profiler) Add(phase string, p *Program, submits int) error {
	labels, times, err := p.Spans()
	if err != nil || labels == nil {
		return err
	}
	if f.phases == nil {
		f.phases = map[string]*phaseProfile{}
	}
	ph := f.phases[phase]
	if ph == nil {
		ph = &phaseProfile{byLabel: map[string]*spanStat{}}
		f.phases[phase] = ph
	}
	ph.steps++
	ph.dispatches += p.Dispatches()
	ph.barriers += p.Barriers()
	ph.submits += submits
	for i, l := range labels {
		st := ph.byLabel[l]
		if st == nil {
			st = &spanStat{}
			ph.byLabel[l] = st
		}
		st.n++
		st.total += times[i]
		ph.total += times[i]
	}
	return nil
}

// Write prints each phase's device time per step, by label, largest
// first, with the dispatches, barriers and submits per step.
func (f *Profiler) Write(w io.Writer) {
	var phases []string
	for name := range f.phases {
		phases = append(phases, name)
	}
	sort.Strings(phases)
	for _, name := range phases {
		ph := f.phases[name]
		steps := float64(ph.steps)
		fmt.Fprintf(w, "vulkan profile, %s: %d steps, %.1f µs device time per step; per step %.0f dispatches, %.0f barriers, %.0f submits\n",
			name, ph.steps, us(ph.total)/steps, float64(ph.dispatches)/steps, float64(ph.barriers)/steps, float64(ph.submits)/steps)
		var labels []string
		for l := range ph.byLabel {
			labels = append(labels, l)
		}
		sort.Slice(labels, func(i, j int) bool { return ph.byLabel[labels[i]].total > ph.byLabel[labels[j]].total })
		for _, l := range labels {
			st := ph.byLabel[l]
			fmt.Fprintf(w, "  %-28s %9.1f µs/step %5.1f%%  %5.1f per step, %7.2f µs each\n", l, us(st.total)/steps,
				100*float64(st.total)/float64(max(ph.total, 1)), float64(st.n)/steps, us(st.total)/float64(st.n))
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
