package cpu

import (
	"fmt"
	"runtime/debug"
	"time"

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
	ctx         int // KV cache positions of each sequence
	seqs        int // sequences
	slots       [][]float32
	kv          [][]*kvCache // per Attention node, per sequence: K and V caches
	act         []byte       // activation quantization scratch
	ints        map[int][]int32
	rowsT       int                // bound T
	rowsR       int                // bound R
	batch       backends.Batch     // the bound batch
	segs        []backends.Segment // its sequences' runs
	attnJob     attnJob            // runAttention's reusable work
	attnScratch []attnBuf          // per-thread attention scratch
	tileBufs    [][]float32        // per-thread matmul tile scratch
	jobs        jobs               // reusable parallel work descriptions
	parts       [][]matmulPart     // per node: its matmul parts, reused
	ropes       []ropeTables       // RoPE's angles of the bound positions (rope.go)
	broken      error              // set when a Run failed midway: every later Run returns it
	x           *backends.Exchange // during RunSplit: values crossing backends
	tap         taps               // nodes whose values a tap sees (tap.go)
	prof        *cpuProfile        // StartProfile: per-node wall time (profile.go)
}

// NewState allocates buffers for a session with a KV cache of ctx
// positions. It first works out how much memory the session needs (see
// StateBytes) and refuses, saying how much, when that overflows or is
// more than the machine has available.
func (p *Program) NewState(ctx int, kvType KVType) (*State, error) {
	return p.NewStateSeqs(ctx, 1, kvType)
}

// NewStateSeqs is NewState for seqs independent sequences of ctx
// positions each (backends.StateOptions.Seqs): each sequence has its own
// K and V caches, and a batch may hold tokens of any of them
// (RunBatch).
func (p *Program) NewStateSeqs(ctx, seqs int, kvType KVType) (*State, error) {
	return p.NewStateWith(backends.StateOptions{Ctx: ctx, Seqs: seqs, KVType: kvType})
}

// NewStateWith is NewStateSeqs with every option of the backends
// contract, flash attention included (backends.CheckKV's rules).
func (p *Program) NewStateWith(o backends.StateOptions) (*State, error) {
	ctx, seqs, kvType, flash := o.Ctx, o.Seqs, o.KVType, o.FlashAttn
	if seqs < 1 || seqs > MaxContext {
		return nil, fmt.Errorf("%d sequences: want 1 to %d", seqs, MaxContext)
	}
	if err := backends.CheckKV(kvType, flash); err != nil {
		return nil, err
	}
	if err := backends.CheckFlashAcc(o); err != nil {
		return nil, err
	}
	need, err := p.stateBytes(ctx, seqs, kvType, flash)
	if err != nil {
		return nil, err
	}
	if err := p.checkFits(need, kvType, flash); err != nil {
		return nil, err
	}
	s := &State{p: p, ctx: ctx, seqs: seqs, ints: map[int][]int32{}}
	arena := make([]float32, p.arenaLen)
	s.slots = make([][]float32, len(p.slots))
	for i, sl := range p.slots {
		s.slots[i] = arena[sl.off : sl.off+sl.size : sl.off+sl.size]
	}
	s.kv = make([][]*kvCache, len(p.attention))
	for i, id := range p.attention {
		a := p.g.Nodes[id].Attrs
		for range seqs {
			if flash {
				c := newFlashKVCache(a.Int("kv_heads"), a.Int("head_dim"), ctx, kvType)
				c.f32Acc = o.FlashF32Acc
				s.kv[i] = append(s.kv[i], c)
			} else {
				s.kv[i] = append(s.kv[i], newKVCache(a.Int("kv_heads"), a.Int("head_dim"), ctx, kvType))
			}
		}
	}
	s.act = make([]byte, p.actBytes)
	s.attnScratch = newAttnBufs(p.threads, need.group, need.headDim, ctx, flash)
	s.tileBufs = make([][]float32, p.threads)
	return s, nil
}

// Context is the KV cache size in positions of each sequence.
func (s *State) Context() int { return s.ctx }

// Seqs is the number of sequences.
func (s *State) Seqs() int { return s.seqs }

// KVBytes is the memory held by the KV cache.
func (s *State) KVBytes() int64 {
	var n int64
	for _, layer := range s.kv {
		for _, c := range layer {
			n += c.bytes()
		}
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
	return s.RunBatch(backends.Batch{Tokens: tokens, Positions: positions, Rows: rows})
}

// RunBatch is Run for a batch that may hold several sequences' tokens
// (see backends.Batch).
func (s *State) RunBatch(b backends.Batch) (logits []float32, err error) {
	if s.p.placed {
		return nil, fmt.Errorf("this program runs part of a graph: run it one split at a time (RunSplit)")
	}
	if err := s.run(s.p.order, b); err != nil {
		return nil, err
	}
	out := &s.p.vals[s.p.logits]
	return s.f32(out)[:len(b.Rows)*out.width], nil
}

// RunSplit evaluates split i of a graph compiled with Options.Placed (see
// backends.SplitState): values of other backends come from x, and the
// values other backends read from this split go to x, as slices of the
// State's buffers that stay valid until their last reader has run. It
// returns the logits when the split computes them, else nil.
func (s *State) RunSplit(i int, tokens, positions, rows []int32, x *backends.Exchange) ([]float32, error) {
	return s.RunSplitBatch(i, backends.Batch{Tokens: tokens, Positions: positions, Rows: rows}, x)
}

// RunSplitBatch is RunSplit for a batch that may hold several sequences'
// tokens.
func (s *State) RunSplitBatch(i int, b backends.Batch, x *backends.Exchange) ([]float32, error) {
	g := s.p.g
	if !s.p.placed || i < 0 || i >= len(g.Splits) || g.Splits[i].Backend != name {
		return nil, fmt.Errorf("split %d is not one of the CPU's splits of this program", i)
	}
	nodes := g.Splits[i].Nodes
	s.x = x
	defer func() { s.x = nil }()
	if err := s.run(nodes, b); err != nil {
		return nil, err
	}
	rows := b.Rows
	var logits []float32
	for _, id := range nodes {
		v := &s.p.vals[id]
		if s.p.exported[id] {
			x.Put(id, s.f32(v))
		}
		if id == s.p.logits {
			logits = s.f32(v)[:len(rows)*v.width]
		}
	}
	return logits, nil
}

// run binds a batch and runs nodes in order.
func (s *State) run(nodes []int, b backends.Batch) error {
	if s.broken != nil {
		return s.broken
	}
	if s.p.general {
		return fmt.Errorf("this program runs a graph of your own: run it with RunGraph")
	}
	if err := s.bind(b); err != nil {
		return err
	}
	if err := s.exec(nodes); err != nil {
		return err
	}
	if s.prof != nil {
		s.prof.at(s.rowsT).steps++
	}
	return nil
}

// exec runs the nodes of a bound batch in order.
func (s *State) exec(nodes []int) (err error) {
	node := -1
	prev := debug.SetPanicOnFault(true) // once per Run: the workers keep it set (see pool.work)
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			s.broken = s.p.fault(r, node)
			err = s.broken
		}
	}()
	for _, id := range nodes {
		v := &s.p.vals[id]
		if v.run == nil {
			continue
		}
		node = id
		var start time.Time
		if s.prof != nil {
			start = time.Now()
		}
		if err := v.run(s, v); err != nil {
			return fmt.Errorf("%s: %w", describe(v.node), err)
		}
		if s.prof != nil {
			s.profiled(v, time.Since(start))
		}
		if s.tap.on != nil {
			if err := s.tapped(v); err != nil {
				return fmt.Errorf("%s: %w", describe(v.node), err)
			}
		}
	}
	return nil
}

// runImport is the kernel of a Copy of a value another backend computed
// (Options.Placed): it takes the value from the step's Exchange.
func runImport(s *State, v *value) error {
	dst := s.f32(v)
	if s.x == nil {
		return fmt.Errorf("no exchange to import from")
	}
	src, err := s.x.Get(v.node.Inputs[0], len(dst))
	if err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

// CopySeq makes the first n KV cells of sequence dst a copy of sequence
// src's, in every layer (backends.SeqCopier).
func (s *State) CopySeq(dst, src, n int) error {
	if err := backends.CheckCopy(dst, src, n, s.seqs, s.ctx); err != nil {
		return err
	}
	if s.broken != nil {
		return s.broken
	}
	if dst == src {
		return nil
	}
	for _, layer := range s.kv {
		layer[dst].copyFrom(layer[src], n)
	}
	return nil
}

// Broken returns the error that broke the State (see Run), or nil.
func (s *State) Broken() error { return s.broken }

func (s *State) bind(b backends.Batch) error {
	segs, err := backends.CheckBatch(b, s.seqs, s.ctx, s.p.maxTokens, s.segs)
	if err != nil {
		return err
	}
	g := s.p.g
	s.ints[g.Inputs["tokens"]] = b.Tokens
	s.ints[g.Inputs["positions"]] = b.Positions
	s.ints[g.Inputs["rows"]] = b.Rows
	s.rowsT, s.rowsR = len(b.Tokens), len(b.Rows)
	s.batch, s.segs = b, segs
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
