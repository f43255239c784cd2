package backends

import (
	"fmt"
	"sort"
	"sync"
)

var (
	registryMu sync.RWMutex
	registry   = map[string]Executor{}
)

// Register makes an executing backend available by its name; backends call
// it from init. Registering a name twice panics: it is a programming error
// found at start-up.
func Register(e Executor) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[e.Name()]; dup {
		panic("backends: " + e.Name() + " registered twice")
	}
	registry[e.Name()] = e
}

// Lookup returns the registered backend called name.
func Lookup(name string) (Executor, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if e, ok := registry[name]; ok {
		return e, nil
	}
	return nil, fmt.Errorf("no backend %q in this build (backends: %v)", name, namesLocked())
}

// Names lists the registered backends, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
