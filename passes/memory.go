package passes

import (
	"fmt"
	"math"
	"sort"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/safemath"
	"github.com/weft-ml/weft/ops"
)

// arenaAlign is the alignment of every buffer in an arena, in bytes.
const arenaAlign = 64

// inPlace lists, per op, the operands whose buffer the result may reuse
// once that operand is dead: every backend's kernel for the op must allow
// its output to alias them. (SwiGLU writes before reading up, so only its
// gate qualifies; MatMulAdd reads each residual element before writing it.)
var inPlace = map[string][]int{
	ops.Add: {0, 1}, ops.Mul: {0, 1}, ops.Scale: {0}, ops.SiLU: {0}, ops.GELU: {0}, ops.SwiGLU: {0},
	ops.RMSNorm: {0}, ops.LayerNorm: {0}, ops.RoPE: {0},
	ops.RMSNormMul: {0}, ops.LayerNormMul: {0}, ops.LayerNormMulAdd: {0}, ops.MatMulAdd: {2},
}

// planMemory gives every computed node a buffer in its backend's arena,
// sized for c.Tokens tokens: results reuse a dead operand's buffer where
// the op allows it, other buffers take the best-fitting free block. A Part
// lies inside its parent's buffer, parts stored one after another each
// sized for c.Tokens rows.
func planMemory(g *graph.Graph, c Config) (Change, error) {
	var ch Change
	tokens := c.Tokens
	if tokens <= 0 {
		tokens = 512
	}
	order, err := g.TopoOrder()
	if err != nil {
		return ch, err
	}
	lastUse := lastUses(g, order)
	arenas := map[string]*arena{}
	mem := &graph.Memory{Tokens: tokens, Arenas: map[string]int64{}}
	owner := map[int]bool{} // nodes that own their block
	reused := 0
	for step, id := range order {
		n := g.Nodes[id]
		n.Buffer = nil
		if n.Op == "Input" || n.Op == "Weight" {
			continue
		}
		size, err := bufferBytes(n.Type, tokens)
		if err != nil {
			return ch, fmt.Errorf("node %d (%s %q): %w", n.ID, n.Op, n.Name, err)
		}
		a := arenas[backendOf(c, n)]
		if a == nil {
			a = &arena{}
			arenas[backendOf(c, n)] = a
		}
		switch donor := donorOf(g, n, step, lastUse, size); {
		case n.Op == ops.Part:
			p := g.Nodes[n.Inputs[0]].Buffer
			delta, ok := safemath.Product(int64(tokens), int64(n.Attrs.Int("start")), 4)
			if !ok {
				return ch, fmt.Errorf("node %d (%s %q): offset for %d tokens overflows", n.ID, n.Op, n.Name, tokens)
			}
			n.Buffer = &graph.Buffer{Offset: p.Offset + delta, Size: size, View: true}
		case donor >= 0:
			n.Buffer = &graph.Buffer{Offset: g.Nodes[donor].Buffer.Offset, Size: g.Nodes[donor].Buffer.Size}
			owner[id] = true
			delete(owner, donor)
			reused++
			mem.Naive += align(size)
		default:
			n.Buffer = &graph.Buffer{Offset: a.alloc(size), Size: align(size)}
			if a.size > math.MaxInt64/2 { // each size is at most that, so the sum did not wrap
				return ch, fmt.Errorf("the %s arena for %d tokens overflows: use a smaller batch", backendOf(c, n), tokens)
			}
			owner[id] = true
			mem.Naive += align(size)
		}
		freeDead(g, n, step, lastUse, owner, arenas, c)
	}
	for name, a := range arenas {
		mem.Arenas[name] = a.size
	}
	g.Memory = mem
	ch.add(-1, "arenas %v bytes for %d tokens (naive sum %d bytes, %d results in place)", mem.Arenas, tokens, mem.Naive, reused)
	return ch, nil
}

func backendOf(c Config, n *graph.Node) string {
	if n.Backend == "" {
		return c.host().Name()
	}
	return n.Backend
}

// donorOf returns the operand whose buffer n may take over, or -1.
func donorOf(g *graph.Graph, n *graph.Node, step int, lastUse []int, size int64) int {
	ins := inPlace[n.Op]
	if c, ok := ops.LookupCustom(n.Op); ok {
		ins = c.InPlace // as its registration allows
	}
	for _, i := range ins {
		in := g.Nodes[n.Inputs[i]]
		if in.Buffer == nil || in.Buffer.View || lastUse[in.ID] != step || in.Backend != n.Backend || in.Buffer.Size < size || !distinctFromOthers(n, i) {
			continue
		}
		return in.ID
	}
	return -1
}

// distinctFromOthers reports whether operand i appears only once.
func distinctFromOthers(n *graph.Node, i int) bool {
	for j, in := range n.Inputs {
		if j != i && in == n.Inputs[i] {
			return false
		}
	}
	return true
}

// freeDead returns the blocks whose last reader is n.
func freeDead(g *graph.Graph, n *graph.Node, step int, lastUse []int, owner map[int]bool, arenas map[string]*arena, c Config) {
	for _, in := range n.Inputs {
		if g.Nodes[in].Op == ops.Part {
			in = g.Nodes[in].Inputs[0]
		}
		if owner[in] && lastUse[in] == step {
			b := g.Nodes[in].Buffer
			arenas[backendOf(c, g.Nodes[in])].free(b.Offset, b.Size)
			delete(owner, in)
		}
	}
}

// lastUses is each node's last reading step; readers of a Part keep its
// parent alive and graph outputs live to the end.
func lastUses(g *graph.Graph, order []int) []int {
	last := make([]int, len(g.Nodes))
	for step, id := range order {
		for _, in := range g.Nodes[id].Inputs {
			last[in] = step
		}
	}
	for _, id := range g.Outputs {
		last[id] = len(order)
	}
	for i := len(order) - 1; i >= 0; i-- {
		if n := g.Nodes[order[i]]; n.Op == ops.Part {
			last[n.Inputs[0]] = max(last[n.Inputs[0]], last[n.ID])
		}
	}
	return last
}

// bufferBytes is the size of t for a batch of tokens: symbolic outer
// dimensions are bound to tokens (R, the output rows, never exceeds T).
func bufferBytes(t graph.Type, tokens int) (int64, error) {
	if len(t.Shape) == 0 {
		return 0, fmt.Errorf("scalar results have no buffer")
	}
	outer := int64(tokens)
	if d := t.Shape[0]; !d.IsSym() {
		outer = d.N
	}
	if len(t.Shape) == 1 {
		return rowBytes(t, uint64(outer))
	}
	rb, err := rowBytes(t, uint64(t.Shape.PerRow()))
	if err != nil {
		return 0, err
	}
	size, ok := safemath.Mul(rb, outer)
	if !ok || size > math.MaxInt64/2 { // room for alignment and the arena's sum
		return 0, fmt.Errorf("%s for %d tokens overflows: use a smaller batch", t, tokens)
	}
	return size, nil
}

func rowBytes(t graph.Type, n uint64) (int64, error) {
	rb, err := t.DType.RowBytes(n)
	return int64(rb), err
}

func align(n int64) int64 { return (n + arenaAlign - 1) / arenaAlign * arenaAlign }

// arena is a best-fit allocator over free blocks kept sorted by offset.
type arena struct {
	free_ []block
	size  int64
}

type block struct{ off, size int64 }

func (a *arena) alloc(size int64) int64 {
	size = align(size)
	best := -1
	for i, b := range a.free_ {
		if b.size >= size && (best < 0 || b.size < a.free_[best].size) {
			best = i
		}
	}
	if best >= 0 {
		b := &a.free_[best]
		off := b.off
		b.off, b.size = b.off+size, b.size-size
		if b.size == 0 {
			a.free_ = append(a.free_[:best], a.free_[best+1:]...)
		}
		return off
	}
	if k := len(a.free_) - 1; k >= 0 && a.free_[k].off+a.free_[k].size == a.size {
		off := a.free_[k].off
		a.free_ = a.free_[:k]
		a.size = off + size
		return off
	}
	off := a.size
	a.size += size
	return off
}

func (a *arena) free(off, size int64) {
	i := sort.Search(len(a.free_), func(i int) bool { return a.free_[i].off > off })
	a.free_ = append(a.free_, block{})
	copy(a.free_[i+1:], a.free_[i:])
	a.free_[i] = block{off, size}
	if i+1 < len(a.free_) && a.free_[i].off+a.free_[i].size == a.free_[i+1].off {
		a.free_[i].size += a.free_[i+1].size
		a.free_ = append(a.free_[:i+1], a.free_[i+2:]...)
	}
	if i > 0 && a.free_[i-1].off+a.free_[i-1].size == a.free_[i].off {
		a.free_[i-1].size += a.free_[i].size
		a.free_ = append(a.free_[:i], a.free_[i+1:]...)
	}
}
