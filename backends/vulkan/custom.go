//go:build linux && (amd64 || arm64)

package vulkan

import (
	"encoding/binary"
	"fmt"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// Custom ops (ops.Register) with a Vulkan kernel run here; those without
// one are refused, so placement puts them on the CPU and the plan runs in
// splits. The kernel's contract (bindings and push constants) is
// ops.VulkanKernel's.

// customSupports reports whether n is a custom op and, if so, why this
// backend cannot run it (nil: it can).
func customSupports(n *graph.Node, g *graph.Graph) (bool, error) {
	c, ok := ops.LookupCustom(n.Op)
	if !ok {
		return false, nil
	}
	if c.Vulkan == nil {
		return true, fmt.Errorf("no Vulkan shader for %s (custom op without a Vulkan kernel)", n.Op)
	}
	if n.Type.DType != gguf.TypeF32 {
		return true, fmt.Errorf("custom op %s: a %s result (Vulkan kernels write F32)", n.Op, n.Type.DType)
	}
	for i, id := range n.Inputs {
		in := g.Nodes[id]
		switch {
		case in.Op == "Input" && in.Type.DType != gguf.TypeI32,
			in.Op != "Input" && in.Type.DType != gguf.TypeF32:
			return true, fmt.Errorf("custom op %s: operand %d is %s %s (Vulkan kernels read F32 values and I32 graph inputs)", n.Op, i, in.Op, in.Type)
		}
	}
	return true, nil
}

// customKernel returns c's pipeline for a node of n operands, created on
// first use.
func (e *Executable) customKernel(c *ops.Custom, n int) (*Kernel, error) {
	key := fmt.Sprintf("custom:%s/%d", c.Name, n)
	e.mu.Lock()
	defer e.mu.Unlock()
	if k := e.kernels[key]; k != nil {
		return k, nil
	}
	k, err := e.d.NewKernel(KernelSpec{Name: c.Name, SPIRV: c.Vulkan.SPIRV, Bindings: n + 1, PushBytes: 4 * c.PushWords(n), Workgroup: c.Vulkan.Workgroup})
	if err != nil {
		return nil, fmt.Errorf("custom op %s: %w", c.Name, err)
	}
	e.kernels[key] = k
	return k, nil
}

// custom records c's kernel for v: operands bound in order, then the
// result; push constants rows, width, offsets and attributes.
func (r *recorder) custom(c *ops.Custom, v *value, dst Range, doff uint32) error {
	n := v.n
	k, err := r.s.e.customKernel(c, len(n.Inputs))
	if err != nil {
		return err
	}
	rows := r.rows(v)
	push := []uint32{uint32(rows), uint32(v.width)}
	bufs := make([]Range, 0, len(n.Inputs)+1)
	for i, id := range n.Inputs {
		if in := r.in(v, i); in.kind == kindWeight && len(in.w) != 1 {
			return fmt.Errorf("operand %d: weight %q is split into %d buffers: a custom kernel reads a weight of one buffer", i, in.n.Name, len(in.w))
		}
		b, off := r.operand(id)
		bufs, push = append(bufs, b), append(push, off)
	}
	bufs, push = append(bufs, dst), append(push, doff)
	for _, a := range c.Attrs {
		push = append(push, f32bits(n.Attrs.Float(a)))
	}
	b := make([]byte, 4*len(push))
	for i, w := range push {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return r.p.Dispatch(k, c.Vulkan.Dispatch(rows, v.width), b, bufs...)
}
