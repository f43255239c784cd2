package backends

import (
	"errors"
	"fmt"
	"slices"
)

// TapFunc sees one node's value during a step: rows rows of the node's
// width, row-major. v belongs to the backend and is valid only during the
// call (the buffer is reused by later nodes). An error stops the step.
type TapFunc func(node, rows int, v []float32) error

// Tapper is an optional State capability: fn sees the value of each of
// nodes right after the State computes it, in every later Run or
// RunSplit. nil nodes or a nil fn turn tapping off. A backend that
// computes values only on a device (so cannot call fn between nodes)
// leaves it out: the runtime then copies the values to tap to the host
// (see runtime.Options.Taps).
type Tapper interface {
	SetTap(nodes []int, fn TapFunc) error
}

// SetTap gives each backend's State the tapped nodes it computes; every
// tapped node must be computed by a State that can tap.
func (s *splitState) SetTap(nodes []int, fn TapFunc) error {
	placed := map[string][]int{}
	for _, id := range nodes {
		if id < 0 || id >= len(s.g.Nodes) {
			return fmt.Errorf("tap: no node %d", id)
		}
		b := s.g.Nodes[id].Backend
		placed[b] = append(placed[b], id)
	}
	var errs []error
	for _, name := range s.names {
		t, ok := s.states[name].(Tapper)
		mine := placed[name]
		delete(placed, name)
		switch {
		case ok:
			if len(mine) == 0 || fn == nil {
				errs = append(errs, t.SetTap(nil, nil))
			} else {
				errs = append(errs, t.SetTap(mine, fn))
			}
		case len(mine) > 0 && fn != nil:
			errs = append(errs, fmt.Errorf("tap: backend %s cannot tap node %d: copy its value to the host first", name, mine[0]))
		}
	}
	for name, ids := range placed {
		if fn != nil && !slices.Contains(s.names, name) {
			errs = append(errs, fmt.Errorf("tap: node %d is not placed on any backend of this program (%q)", ids[0], name))
		}
	}
	return errors.Join(errs...)
}
