package cpu

import (
	"fmt"

	"github.com/weft-ml/weft/backends"
)

// taps is a State's tapping (backends.Tapper): on[id] marks the nodes
// whose values fn sees as soon as they are computed. It is nil when
// nothing is tapped, so an untapped step pays one nil check per node.
type taps struct {
	on []bool
	fn backends.TapFunc
}

// SetTap makes fn see the value of each of nodes that this State computes,
// right after its kernel ran, in every later Run and RunSplit; nodes it
// does not compute (graph inputs, weights, other backends' nodes) are
// never seen. nil nodes or a nil fn turn tapping off.
func (s *State) SetTap(nodes []int, fn backends.TapFunc) error {
	if len(nodes) == 0 || fn == nil {
		s.tap = taps{}
		return nil
	}
	on := make([]bool, len(s.p.vals))
	for _, id := range nodes {
		if id < 0 || id >= len(on) {
			return fmt.Errorf("tap: no node %d", id)
		}
		on[id] = true
	}
	s.tap = taps{on: on, fn: fn}
	return nil
}

// tapped calls the tap with v's value when v is tapped. A panic in the
// tap is the tap's error, not a fault of the State.
func (s *State) tapped(v *value) (err error) {
	if !s.tap.on[v.node.ID] || v.run == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tap panicked: %v", r)
		}
	}()
	return s.tap.fn(v.node.ID, s.rows(v), s.f32(v))
}
