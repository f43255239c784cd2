package ops

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/weft-ml/weft/graph"
)

// Custom ops: a program teaches weft an op of its own with one Register
// call: the IR learns its arity, attributes and type inference (graph
// verifies it like a built-in), the CPU backend runs its Go kernel, and a
// Vulkan backend its SPIR-V kernel when one is given; placement puts it on
// a backend that has a kernel for it, so an op without a Vulkan kernel
// runs on the CPU inside a Vulkan plan (through the split execution of
// backends.LoadSplits). The passes leave custom ops alone: no fusion
// matches them and no two are merged as common subexpressions. A plan
// records the custom ops it uses (runtime.Plan.CustomOps); loading it in a
// program that has not registered them fails naming them.

// Custom describes an op of the program's own.
type Custom struct {
	Name  string
	Arity int // inputs; -1: any number
	// Attrs names the attributes the op takes; a node with any other is
	// refused.
	Attrs []string
	// Infer returns the result type for the operands' types (and the
	// attributes), or why they do not fit. The CPU backend runs results
	// of type F32 [T, width] (T the rows of a step).
	Infer func(in []graph.Type, a graph.Attrs) (graph.Type, error)
	// InPlace lists the operands whose buffer the result may take once
	// that operand is dead: the kernels must allow Out to alias them.
	InPlace []int
	// CPU computes the op on the CPU (required).
	CPU CPUKernel
	// Vulkan computes it on a Vulkan device (optional).
	Vulkan *VulkanKernel
}

// CPUKernel computes one node's value. It is called once per thread of
// the program, concurrently, with Call.Thread in [0, Call.Threads): each
// call computes its share (Call.Span splits rows evenly). A returned
// error, or a panic, fails that step only: the session stays usable.
type CPUKernel func(c *Call) error

// Call is one thread's invocation of a CPU kernel.
type Call struct {
	Out             Tensor   // the result: write its F32 values
	In              []Tensor // the operands, read-only
	Attrs           graph.Attrs
	Thread, Threads int
}

// Span returns this thread's share [lo, hi) of n items (rows, say), split
// evenly among the threads.
func (c *Call) Span(n int) (lo, hi int) {
	per := (n + c.Threads - 1) / c.Threads
	return min(n, c.Thread*per), min(n, (c.Thread+1)*per)
}

// Tensor is a typed view of one value for a kernel: Rows rows of Width
// elements, row-major. Activations and F32 weights are in F32, index
// inputs in I32; weights of other types are their GGUF bytes in Raw.
type Tensor struct {
	DType       graph.DType
	Rows, Width int // a vector weight is one row
	F32         []float32
	I32         []int32
	Raw         []byte
}

// Row returns row r of an F32 tensor.
func (t Tensor) Row(r int) []float32 { return t.F32[r*t.Width : (r+1)*t.Width] }

// VulkanKernel is a compute shader for a custom op. Its bindings are the
// node's operands in order (binding i: operand i's buffer), then the
// result (binding len(In)); every buffer holds 32-bit words. Its push
// constants are, as 32-bit words: the result's rows and width; the
// element (word) offset of each operand in its buffer; the result's
// offset; then each attribute of Custom.Attrs in order, as a float32.
// Operands are F32 values (computed, or weights of one buffer) or I32
// graph inputs.
type VulkanKernel struct {
	SPIRV     []byte
	Workgroup uint32 // local size x (specialization constant 0)
	// Dispatch returns the workgroup counts for a result of rows×width.
	Dispatch func(rows, width int) [3]uint32
}

// PushWords is the number of push-constant words a VulkanKernel of c
// receives for a node of n operands.
func (c *Custom) PushWords(n int) int { return 2 + n + 1 + len(c.Attrs) }

var (
	customMu sync.RWMutex
	customs  = map[string]*Custom{}
)

// Register teaches weft the op c describes. It fails when the name is
// taken (by a built-in or another custom op), when Infer or CPU is
// missing, or when InPlace names an operand the op does not have.
func Register(c Custom) error {
	switch {
	case c.Name == "":
		return fmt.Errorf("custom op without a name")
	case c.Infer == nil:
		return fmt.Errorf("custom op %q has no type inference (Infer)", c.Name)
	case c.CPU == nil:
		return fmt.Errorf("custom op %q has no CPU kernel", c.Name)
	case c.Arity < -1:
		return fmt.Errorf("custom op %q: arity %d", c.Name, c.Arity)
	case c.Vulkan != nil && (len(c.Vulkan.SPIRV) == 0 || c.Vulkan.Dispatch == nil || c.Vulkan.Workgroup == 0):
		return fmt.Errorf("custom op %q: a Vulkan kernel needs SPIR-V, a workgroup size and Dispatch", c.Name)
	}
	for _, i := range c.InPlace {
		if i < 0 || c.Arity >= 0 && i >= c.Arity {
			return fmt.Errorf("custom op %q: InPlace operand %d of %d", c.Name, i, c.Arity)
		}
	}
	c.Attrs = slices.Clone(c.Attrs)
	c.InPlace = slices.Clone(c.InPlace)
	cp := c
	infer := c.Infer
	err := graph.Register(graph.OpDef{Name: c.Name, Arity: c.Arity, Infer: func(in []graph.Type, a graph.Attrs) (graph.Type, error) {
		for k := range a {
			if !slices.Contains(cp.Attrs, k) {
				return graph.Type{}, fmt.Errorf("custom op %s takes no attribute %q (attributes: %v)", cp.Name, k, cp.Attrs)
			}
		}
		return infer(in, a)
	}})
	if err != nil {
		return err
	}
	customMu.Lock()
	customs[c.Name] = &cp
	customMu.Unlock()
	return nil
}

// LookupCustom returns the registration of custom op name.
func LookupCustom(name string) (*Custom, bool) {
	customMu.RLock()
	defer customMu.RUnlock()
	c, ok := customs[name]
	return c, ok
}

// IsCustom reports whether op was registered with Register.
func IsCustom(op string) bool {
	_, ok := LookupCustom(op)
	return ok
}

// CustomOps lists the custom ops g uses, sorted.
func CustomOps(g *graph.Graph) []string {
	var names []string
	for _, n := range g.Nodes {
		if IsCustom(n.Op) && !slices.Contains(names, n.Op) {
			names = append(names, n.Op)
		}
	}
	sort.Strings(names)
	return names
}
