package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime/debug"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// Custom ops (ops.Register) run their Go kernel once per thread: each call
// is told its thread and the thread count and computes its share. A
// custom kernel is the program's code, not weft's: its error or panic
// fails the step it ran in, and the State stays usable (a built-in
// kernel's panic is a bug and breaks the State, see State.Run).

// customKernel returns the kernel that runs custom op op, if registered.
func customKernel(op string) (kernel, bool) {
	c, ok := ops.LookupCustom(op)
	if !ok || c.CPU == nil {
		return nil, false
	}
	return func(s *State, v *value) error { return s.runCustom(c, v) }, true
}

// isCustom reports whether op is a custom op with a CPU kernel.
func isCustom(op string) bool {
	_, ok := customKernel(op)
	return ok
}

// prepareCustom decodes the F32 weight matrices a custom node reads, so
// that its kernel sees them as float32s like every F32 operand (vectors
// are decoded when bound).
func (p *Program) prepareCustom(n *graph.Node) error {
	for _, id := range n.Inputs {
		w := &p.vals[id]
		if w.node.Op != "Weight" || w.node.Type.DType != graph.F32 || w.vec != nil {
			continue
		}
		if w.pack {
			return fmt.Errorf("%s: weight %q is repacked for the matmuls", describe(n), w.node.Name)
		}
		w.vec = make([]float32, len(w.raw)/4)
		for i := range w.vec {
			w.vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(w.raw[4*i:]))
		}
	}
	return nil
}

// view is a value as a custom kernel sees it.
func (s *State) view(v *value) ops.Tensor {
	n := v.node
	t := ops.Tensor{DType: n.Type.DType, Width: v.width, Rows: 1}
	switch {
	case n.Op == "Input" && n.Type.DType == graph.I32:
		t.I32 = s.ints[n.ID]
		t.Rows, t.Width = len(t.I32), 1
	case n.Op == "Weight":
		if len(n.Type.Shape) == 2 {
			t.Rows = int(n.Type.Shape[0].N)
		}
		if t.F32 = v.vec; t.F32 == nil {
			t.Raw = v.raw
		}
	default:
		t.Rows, t.F32 = s.rows(v), s.f32(v)
	}
	return t
}

// customJob runs one custom node's kernel on each thread.
type customJob struct {
	fn    ops.CPUKernel
	calls []ops.Call
	errs  []error
}

func (j *customJob) run(_, lo, hi int) {
	for k := lo; k < hi; k++ {
		j.errs[k] = j.call(k)
	}
}

// call runs thread k's share; a panic is its error.
func (j *customJob) call(k int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kernel panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return j.fn(&j.calls[k])
}

func (s *State) runCustom(c *ops.Custom, v *value) error {
	in := make([]ops.Tensor, len(v.node.Inputs))
	for i := range in {
		in[i] = s.view(s.input(v, i))
	}
	out := s.view(v)
	threads := max(1, min(s.p.threads, out.Rows))
	j := &customJob{fn: c.CPU, calls: make([]ops.Call, threads), errs: make([]error, threads)}
	for t := range j.calls {
		j.calls[t] = ops.Call{Out: out, In: in, Attrs: v.node.Attrs, Thread: t, Threads: threads}
	}
	parallelFor(threads, threads, 1, j)
	if err := errors.Join(j.errs...); err != nil {
		return fmt.Errorf("custom op %s: %w", c.Name, err)
	}
	return nil
}
