package cpu

import (
	"slices"
	"time"

	"github.com/weft-ml/weft/backends"
)

// cpuProfile sums the wall time of every node's kernel (its worker pool's
// work and the wait for it) by batch size (backends.Profiler).
type cpuProfile struct {
	steps map[int]*cpuSteps
}

type cpuSteps struct {
	steps int
	spans backends.SpanSet
}

func (p *cpuProfile) at(tokens int) *cpuSteps {
	st := p.steps[tokens]
	if st == nil {
		st = &cpuSteps{}
		p.steps[tokens] = st
	}
	return st
}

// StartProfile times every node of every later Run and RunSplit and
// clears what was measured before (backends.Profiler). An unprofiled
// step pays one nil check per node.
func (s *State) StartProfile() error {
	s.prof = &cpuProfile{steps: map[int]*cpuSteps{}}
	return nil
}

// Profile returns the node times summed since StartProfile, by batch
// size, smallest first (backends.Profiler).
func (s *State) Profile() []backends.StepProfile {
	if s.prof == nil {
		return nil
	}
	var out []backends.StepProfile
	for tokens, st := range s.prof.steps {
		out = append(out, backends.StepProfile{Tokens: tokens, Steps: st.steps, Clock: "wall", Spans: slices.Clone(st.spans.Spans)})
	}
	slices.SortFunc(out, func(a, b backends.StepProfile) int { return a.Tokens - b.Tokens })
	return out
}

// profiled adds one run of v's kernel.
func (s *State) profiled(v *value, d time.Duration) {
	s.prof.at(s.rowsT).spans.Add(v.node.ID, backends.ProfileLabel(s.p.g, v.node), d)
}
