package graph

import (
	"fmt"
	"sort"
	"sync"
)

// OpDef describes an op to the IR: how many inputs it takes (-1: any) and
// how to infer its output type.
type OpDef struct {
	Name  string
	Arity int
	Infer func(in []Type, a Attrs) (Type, error)
}

var (
	regMu sync.RWMutex
	reg   = map[string]OpDef{
		"Input":  {Name: "Input", Arity: 0, Infer: leaf},
		"Weight": {Name: "Weight", Arity: 0, Infer: leaf},
	}
)

func leaf([]Type, Attrs) (Type, error) { return Type{}, fmt.Errorf("leaf nodes carry their own type") }

// Register adds an op definition. Registering a name twice is an error.
func Register(d OpDef) error {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := reg[d.Name]; dup {
		return fmt.Errorf("op %q already registered", d.Name)
	}
	if d.Infer == nil {
		return fmt.Errorf("op %q has no type inference", d.Name)
	}
	reg[d.Name] = d
	return nil
}

// Lookup returns the definition of op name.
func Lookup(name string) (OpDef, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	d, ok := reg[name]
	return d, ok
}

// Ops lists registered op names in order.
func Ops() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(reg))
	for n := range reg {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
