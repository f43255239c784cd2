//go:build linux && (amd64 || arm64)

package vulkan

import (
	"errors"

	"github.com/weft-ml/weft/backends"
)

// StartProfile times every node of every later step with GPU timestamps
// (backends.Profiler) and clears what was measured before. Step shapes
// recorded without timestamps are recorded again.
func (s *Session) StartProfile() error {
	if s.e == nil {
		return errors.New("vulkan: StartProfile on a closed session")
	}
	if s.prof != nil {
		s.prof.steps = nil
		return nil
	}
	s.prof = &Profiler{}
	for _, p := range s.steps {
		p.Close()
	}
	clear(s.steps)
	s.order = nil
	return nil
}

// Profile returns the node times summed since StartProfile (or since the
// session opened, with WEFT_VULKAN_PROFILE=1), by batch size.
func (s *Session) Profile() []backends.StepProfile {
	if s.prof == nil {
		return nil
	}
	return s.prof.Profile()
}
