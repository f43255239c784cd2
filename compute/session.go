package compute

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/weft-ml/weft/backends/cpu"
	"github.com/weft-ml/weft/graph"
)

// ErrBusy is returned by a Session called while another goroutine's call
// on it runs.
var ErrBusy = errors.New("compute: session is in use by another goroutine: make one Session per goroutine")

// Session holds one caller's buffers for a Program. It serves one call at
// a time; Sessions of one Program run concurrently.
type Session struct {
	p    *Program
	st   *cpu.State
	busy atomic.Bool
	f32  map[string][]float32
	i32  map[string][]int32
}

// NewSession allocates a session's buffers.
func (p *Program) NewSession() (*Session, error) {
	st, err := p.prog.NewState(1, cpu.KVF32)
	if err != nil {
		return nil, err
	}
	return &Session{p: p, st: st, f32: map[string][]float32{}, i32: map[string][]int32{}}, nil
}

// Feed is one input's values for a Run: F32 or I32.
type Feed struct {
	name string
	f32  []float32
	i32  []int32
	ids  bool
}

// F32 feeds input name rows×width values, row-major.
func F32(name string, v []float32) Feed { return Feed{name: name, f32: v} }

// I32 feeds input name one index per row.
func I32(name string, v []int32) Feed { return Feed{name: name, i32: v, ids: true} }

// Run evaluates the graph on in, every input fed once, and returns every
// output by name as rows×width values (the caller's to keep). The rows
// are the fed rows (the same for every input, at most MaxRows).
func (s *Session) Run(in ...Feed) (map[string][]float32, error) {
	if !s.busy.CompareAndSwap(false, true) {
		return nil, ErrBusy
	}
	defer s.busy.Store(false)
	clear(s.f32)
	clear(s.i32)
	rows := -1
	for _, f := range in {
		id, ok := s.p.g.Inputs[f.name]
		if !ok {
			return nil, fmt.Errorf("no input %q (inputs: %v)", f.name, sortedNames(s.p.g.Inputs))
		}
		t := s.p.g.Nodes[id].Type
		n, width := len(f.f32), int(t.Shape.Inner().N)
		if f.ids {
			n, width = len(f.i32), 1
		}
		switch {
		case f.ids != (t.DType == graph.I32):
			return nil, fmt.Errorf("input %q is %s: feed it with compute.%s", f.name, t, map[bool]string{true: "I32", false: "F32"}[t.DType == graph.I32])
		case s.f32[f.name] != nil || s.i32[f.name] != nil:
			return nil, fmt.Errorf("input %q fed twice", f.name)
		case n == 0 || n%width != 0:
			return nil, fmt.Errorf("input %q: %d values are not whole rows of %d", f.name, n, width)
		case rows >= 0 && n/width != rows:
			return nil, fmt.Errorf("input %q: %d rows, other inputs %d", f.name, n/width, rows)
		}
		rows = n / width
		if f.ids {
			s.i32[f.name] = f.i32
		} else {
			s.f32[f.name] = f.f32
		}
	}
	for _, name := range sortedNames(s.p.g.Inputs) {
		if s.f32[name] == nil && s.i32[name] == nil {
			return nil, fmt.Errorf("input %q not fed", name)
		}
	}
	if rows < 0 {
		return nil, errors.New("the graph has no inputs to feed: nothing sets the rows of a step")
	}
	if err := s.st.RunGraph(rows, s.f32, s.i32); err != nil {
		return nil, err
	}
	out := make(map[string][]float32, len(s.p.g.Outputs))
	for name := range s.p.g.Outputs {
		v, err := s.st.Output(name)
		if err != nil {
			return nil, err
		}
		out[name] = append([]float32(nil), v...)
	}
	return out, nil
}
