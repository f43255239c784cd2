package cpu

import (
	"fmt"
	"runtime/debug"

	"github.com/weft-ml/weft/backends"
)

// KVType selects the element type of the KV cache (the contract's type).
type KVType = backends.KVType

// KV cache element types. F16 is llama.cpp's default.
const (
	KVF16 = backends.KVF16
	KVF32 = backends.KVF32
)

// State is one session's mutable data: activation buffers and KV cache.
type State struct {
	p           *Program
	ctx         int
	slots       [][]float32
	kv          []*kvCache // per Attention node: K and V caches
	act         []byte     // activation quantization scratch
	ints        map[int][]int32
	rowsT       int // bound T
	rowsR       int // bound R
	pos0        int
	attnScratch []attnBuf      // per-thread attention scratch
	tileBufs    [][]float32    // per-thread matmul tile scratch
	jobs        jobs           // reusable parallel work descriptions
	parts       [][]matmulPart // per node: its matmul parts, reused
	broken      error          // set when a Run failed midway: every later Run returns it
}

// NewState allocates buffers for a session with a KV cache of ctx
// positions. It first works out how much memory the session needs (see
// StateBytes) and refuses, saying how much, when that overflows or is
// more than the machine has available.
func (p *Program) NewState(ctx int, kvType KVType) (*State, error) {
	need, err := p.StateBytes(ctx, kvType)
	if err != nil {
		return nil, err
	}
	if err := p.checkFits(need, kvType); err != nil {
		return nil, err
	}
	s := &State{p: p, ctx: ctx, ints: map[int][]int32{}}
	arena := make([]float32, p.arenaLen)
	s.slots = make([][]float32, len(p.slots))
	for i, sl := range p.slots {
		s.slots[i] = arena[sl.off : sl.off+sl.size : sl.off+sl.size]
	}
	s.kv = make([]*kvCache, len(p.attention))
	for i, id := range p.attention {
		a := p.g.Nodes[id].Attrs
		s.kv[i] = newKVCache(a.Int("kv_heads"), a.Int("head_dim"), ctx, kvType)
	}
	s.act = make([]byte, p.actBytes)
	s.attnScratch = newAttnBufs(p.threads, need.group, need.headDim, ctx)
	s.tileBufs = make([][]float32, p.threads)
	return s, nil
}

// Context is the KV cache size in positions.
func (s *State) Context() int { return s.ctx }

// KVBytes is the memory held by the KV cache.
func (s *State) KVBytes() int64 {
	var n int64
	for _, c := range s.kv {
		n += c.bytes()
	}
	return n
}

// Run evaluates the graph for a batch of tokens at consecutive positions
// starting at positions[0], appending their K and V to the cache, and
// returns the logits of the requested batch rows as [len(rows)][vocab].
// The returned slice is overwritten by the next Run.
//
// A memory fault while the kernels run (a mapped weights file truncated
// or replaced under the running process) and any panic in a kernel, on
// this goroutine or a worker's, are returned as an error (a *FaultError
// for faults) instead of killing the process. The KV cache is then
// half-written, so the State is broken: every later Run returns the same
// error.
func (s *State) Run(tokens, positions, rows []int32) (logits []float32, err error) {
	if s.broken != nil {
		return nil, s.broken
	}
	if err := s.bind(tokens, positions, rows); err != nil {
		return nil, err
	}
	node := -1
	prev := debug.SetPanicOnFault(true) // once per Run: the workers keep it set (see pool.work)
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			s.broken = s.p.fault(r, node)
			logits, err = nil, s.broken
		}
	}()
	for _, id := range s.p.order {
		v := &s.p.vals[id]
		if v.run == nil {
			continue
		}
		node = id
		if err := v.run(s, v); err != nil {
			return nil, fmt.Errorf("%s: %w", describe(v.node), err)
		}
	}
	out := &s.p.vals[s.p.logits]
	return s.f32(out)[:len(rows)*out.width], nil
}

// Broken returns the error that broke the State (see Run), or nil.
func (s *State) Broken() error { return s.broken }

func (s *State) bind(tokens, positions, rows []int32) error {
	n := len(tokens)
	if n == 0 {
		return fmt.Errorf("empty batch")
	}
	if n > s.p.maxTokens {
		return fmt.Errorf("batch of %d tokens exceeds the compiled maximum %d", n, s.p.maxTokens)
	}
	if len(positions) != n {
		return fmt.Errorf("%d positions for %d tokens", len(positions), n)
	}
	for i, p := range positions {
		if int(p) != int(positions[0])+i {
			return fmt.Errorf("positions must be consecutive: got %d at index %d after %d", p, i, positions[0])
		}
	}
	if positions[0] < 0 || int(positions[0])+n > s.ctx {
		return fmt.Errorf("context overflow: positions %d..%d do not fit a context of %d", positions[0], int(positions[0])+n-1, s.ctx)
	}
	if len(rows) == 0 || len(rows) > n {
		return fmt.Errorf("%d output rows for a batch of %d", len(rows), n)
	}
	for _, r := range rows {
		if r < 0 || int(r) >= n {
			return fmt.Errorf("output row %d outside the batch of %d", r, n)
		}
	}
	g := s.p.g
	s.ints[g.Inputs["tokens"]] = tokens
	s.ints[g.Inputs["positions"]] = positions
	s.ints[g.Inputs["rows"]] = rows
	s.rowsT, s.rowsR, s.pos0 = n, len(rows), int(positions[0])
	return nil
}

// rows returns how many rows value v has in the current batch.
func (s *State) rows(v *value) int {
	if len(v.node.Type.Shape) < 2 {
		return 1
	}
	switch v.node.Type.Shape[0].Sym {
	case "T":
		return s.rowsT
	case "R":
		return s.rowsR
	}
	return int(v.node.Type.Shape[0].N)
}

// f32 returns the current contents of an F32 value (activation or weight vector).
func (s *State) f32(v *value) []float32 {
	if v.vec != nil {
		return v.vec
	}
	return s.slots[v.slot][:s.rows(v)*v.width]
}

// input returns the value of the node's i-th operand.
func (s *State) input(v *value, i int) *value { return &s.p.vals[v.node.Inputs[i]] }
