package cpu

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"unsafe"

	"github.com/weft-ml/weft/backends"
)

// Weights are read straight from memory-mapped files (the GGUF model and
// the plan's repacked side file). If such a file is truncated while the
// model runs, reading a page past its new end raises SIGBUS, which Go
// turns into a fatal error. Kernels therefore run with
// debug.SetPanicOnFault: State.Run sets it on its goroutine for the
// length of the call, and each worker of the pool sets it once when it
// starts (pool.work). A fault becomes a panic, which the worker or Run
// recovers; Run returns it as a *FaultError and marks the State broken.
// This holds for shared and private (MAP_PRIVATE) mappings alike: a page
// not yet read has nothing to copy once the file is gone.
//
// The guard costs one runtime call at the start and end of Run and a
// deferred recover per parallel call; decode speed does not change (see
// docs/decisions.md).

// FaultError is a memory fault while the kernels ran: a mapped weights
// file changed or was truncated under the running process.
type FaultError struct {
	Addr   uintptr // the faulting address
	File   string  // the file mapped at Addr, "" when it is not known
	Packed bool    // File is the plan's repacked side file
	Weight string  // the weight tensor whose bytes hold Addr, "" when not known
	Node   string  // the node being run ("node 3 (MatMul \"x\")"), "" while compiling
}

// Is makes a fault match backends.ErrWeightsChanged.
func (e *FaultError) Is(target error) bool { return target == backends.ErrWeightsChanged }

func (e *FaultError) Error() string {
	what := "the model file " + e.File
	switch {
	case e.File == "":
		what = "a mapped weights file"
	case e.Packed:
		what = "the repacked weights file " + e.File
	}
	where := ""
	if e.Weight != "" {
		where += fmt.Sprintf(" reading weight %q", e.Weight)
	}
	if e.Node != "" {
		where += " in " + e.Node
	}
	return fmt.Sprintf("%s changed or was truncated while running (memory fault at %#x%s): restore it and restart", what, e.Addr, where)
}

// PanicError is a panic in a kernel: a bug, returned as an error so that
// a server survives it. Stack is where it happened.
type PanicError struct {
	Value any
	Node  string
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error in %s: %v (a bug: please report it)", e.Node, e.Value)
}

// failure is a panic recovered on a worker, re-raised on the goroutine
// that handed out the work (see split) with the worker's stack.
type failure struct {
	value any
	stack []byte
}

// fault turns a value recovered while running node (-1: while compiling)
// into a *FaultError or a *PanicError.
func (p *Program) fault(r any, node int) error {
	stack := []byte(nil)
	if f, ok := r.(*failure); ok {
		r, stack = f.value, f.stack
	} else {
		stack = debug.Stack()
	}
	where := ""
	if node >= 0 {
		where = describe(p.g.Nodes[node])
	}
	if re, ok := r.(runtime.Error); ok {
		if a, ok := re.(interface{ Addr() uintptr }); ok {
			e := &FaultError{Addr: a.Addr(), Node: where}
			p.locate(e)
			return e
		}
	}
	if where == "" {
		where = "compiling the program"
	}
	return &PanicError{Value: r, Node: where, Stack: stack}
}

// locate finds the weight, else the file, whose mapped bytes hold e.Addr.
func (p *Program) locate(e *FaultError) {
	var lo, hi [2]uintptr // per file: the span of its weights
	for i := range p.vals {
		v := &p.vals[i]
		if len(v.raw) == 0 {
			continue
		}
		base := uintptr(unsafe.Pointer(unsafe.SliceData(v.raw)))
		end := base + uintptr(len(v.raw))
		f := 0
		if v.pack {
			f = 1
		}
		if e.Addr >= base && e.Addr < end {
			e.Weight, e.File, e.Packed = v.node.Tensor, p.files[f], v.pack
			return
		}
		if lo[f] == 0 || base < lo[f] {
			lo[f] = base
		}
		hi[f] = max(hi[f], end)
	}
	for f := range lo {
		if e.Addr >= lo[f] && e.Addr < hi[f] {
			e.File, e.Packed = p.files[f], f == 1
		}
	}
}
