package sysmem

import (
	"fmt"
	"sync/atomic"
)

// Memory is the memory available to new allocations.
type Memory struct {
	Bytes  int64
	Source string // where Bytes was read, for messages ("MemAvailable + SwapFree")
}

func (m Memory) String() string { return fmt.Sprintf("%d bytes (%s)", m.Bytes, m.Source) }

// override, when set, replaces the machine's figure (tests).
var override atomic.Pointer[Memory]

// Available returns the memory the process may still allocate; ok is
// false where it cannot be told.
func Available() (m Memory, ok bool) {
	if o := override.Load(); o != nil {
		return *o, true
	}
	return available()
}

// SetForTest makes Available report m until the returned function is
// called. Tests use it to check refusals without depending on the
// machine's memory.
func SetForTest(m Memory) (restore func()) {
	prev := override.Swap(&m)
	return func() { override.Store(prev) }
}
