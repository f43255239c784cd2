package runtime

import (
	"errors"
	"io"

	"github.com/weft-ml/weft/backends"
)

// A backend's Program and States may hold device memory (the Vulkan
// backend's weights, arena and KV caches); they release it through
// io.Closer. A Model tracks its sessions so that Close can release every
// State before the Program whose device they live on.

// ErrSessionClosed is returned by a Session used after its Close.
var ErrSessionClosed = errors.New("session is closed")

// closeIfCloser releases x when its backend made it closable.
func closeIfCloser(x any) error {
	if c, ok := x.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// track records a new session; it is called under m.life's read lock.
func (m *Model) track(s *Session) {
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	if m.sessions == nil {
		m.sessions = map[*Session]struct{}{}
	}
	m.sessions[s] = struct{}{}
}

// releaseAll closes every session's State, then the Program; it is called
// by Close under m.life's write lock, so no batch is running.
func (m *Model) releaseAll() error {
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	var errs []error
	for s := range m.sessions {
		errs = append(errs, s.releaseState())
		delete(m.sessions, s)
	}
	errs = append(errs, closeIfCloser(m.prog))
	return errors.Join(errs...)
}

// Close releases the session's KV cache and activations (on the device,
// for a GPU backend). The session cannot be used afterwards; Close fails
// with ErrSessionBusy while another goroutine's call runs on it. Sessions
// not closed are released by Model.Close.
func (s *Session) Close() error {
	if err := s.claim(); err != nil {
		return err
	}
	defer s.unclaim()
	m := s.m
	m.life.RLock()
	defer m.life.RUnlock()
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	if _, live := m.sessions[s]; !live {
		return nil
	}
	delete(m.sessions, s)
	return s.releaseState()
}

// releaseState closes the State and leaves one that refuses to run.
func (s *Session) releaseState() error {
	err := closeIfCloser(s.st)
	s.st = releasedState{ctx: s.ctx}
	return err
}

// releasedState stands in for a closed session's State.
type releasedState struct{ ctx int }

func (r releasedState) Context() int                        { return r.ctx }
func (releasedState) KVBytes() int64                        { return 0 }
func (releasedState) Run(backends.Batch) ([]float32, error) { return nil, ErrSessionClosed }
