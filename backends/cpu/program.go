package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/safemath"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/quant"
)

// WeightSource supplies the bytes of a weight tensor by GGUF name.
type WeightSource interface {
	Tensor(name string) (*gguf.TensorInfo, bool)
	TensorData(t *gguf.TensorInfo) []byte
}

// Options configure compilation.
type Options struct {
	MaxTokens int // largest batch (tokens per Run); default 512
	Threads   int // goroutines for parallel kernels; default GOMAXPROCS
	// Packed is the plan's side data of weights repacked at compile time,
	// read for every Weight node that carries a Layout.
	Packed []byte
	// ModelFile and PackedFile name the files the weights and Packed are
	// mapped from, for the error when one changes under a running
	// program (see FaultError).
	ModelFile, PackedFile string
	// Placed compiles only the nodes placed on the CPU (graph.Node.Backend):
	// the others run on other backends, and values cross through Copy
	// nodes (backends.LoadSplits). The States then run one split at a
	// time (State.RunSplit).
	Placed bool
	// General compiles a graph that is not a model lowering (a graph of
	// the user's own, see general.go): any named inputs and outputs, run
	// with State.RunGraph.
	General bool
	// F16AsBF16 converts every F16 matmul weight (and a tied F16 table)
	// to BF16 at load, so that the BF16 kernels run (bf16.go).
	F16AsBF16 bool
}

// value is a compiled node: where its data lives and how to compute it.
type value struct {
	node  *graph.Node
	slot  int       // activation buffer slot, -1 for none
	width int       // elements per row (innermost dimension)
	raw   []byte    // Weight: tensor bytes (packed: in its Layout)
	pack  bool      // Weight: raw is in simd's packed layout
	vec   []float32 // Weight: F32 vectors, decoded once
	kv    int       // Attention: index of its KV cache pair
	elems int       // computed: elements for the largest batch
	delta int       // view: elements into its parent's buffer
	run   kernel
}

// Program is a compiled graph, immutable once built.
type Program struct {
	g         *graph.Graph
	order     []int
	vals      []value
	slots     []slot // activation buffers: slices of one arena
	arenaLen  int    // arena size in float32 elements
	maxTokens int
	threads   int
	attention []int     // Attention node IDs, in KV index order
	actBytes  int       // largest activation-quantization scratch of any MatMul
	tileBytes int64     // per-thread tile scratch (tileScratch), 0 if unused
	logits    int       // output node ID
	files     [2]string // the model file and the repacked weights' file, for FaultError
	placed    bool      // Options.Placed: only the CPU's nodes are compiled
	exported  []bool    // placed: nodes whose values a Copy on another backend reads
	general   bool      // Options.General: a graph of the user's own (general.go)
	// Options.F16AsBF16: the weights converted (node IDs) and their count
	// and bytes (BF16Weights).
	asBF16      map[int]bool
	bf16Weights int
	bf16Bytes   int64
	held        *heldMemory // memory outside the Go heap (bf16.go)
}

// OptionError is an Options value out of range (threads): the caller's
// to change, not the plan's. Its CallerOption method lets callers that
// name no cpu type tell it apart from a refusal of the plan.
type OptionError struct{ msg string }

func (e *OptionError) Error() string { return e.msg }

// CallerOption marks the error as the caller's.
func (*OptionError) CallerOption() {}

// Compile prepares g for execution with weights from w. The graph is
// input (a plan file): it is checked (checkGraph) and every size computed
// from it and from o is checked for overflow, so that a program that
// compiles never indexes outside a buffer when it runs.
func Compile(g *graph.Graph, w WeightSource, o Options) (p *Program, err error) {
	switch {
	case o.MaxTokens == 0:
		o.MaxTokens = 512
	case o.MaxTokens < 0 || o.MaxTokens > MaxBatch:
		return nil, fmt.Errorf("batch of %d tokens: want 1 to %d", o.MaxTokens, MaxBatch)
	}
	switch {
	case o.Threads == 0:
		o.Threads = min(runtime.GOMAXPROCS(0), MaxThreads)
	case o.Threads < 0 || o.Threads > MaxThreads:
		return nil, &OptionError{fmt.Sprintf("%d threads: want 1 to %d, or 0 for all cores (--threads)", o.Threads, MaxThreads)}
	}
	if err := g.Verify(); err != nil {
		return nil, err
	}
	check := checkGraph
	if o.General {
		check = checkGeneral
	}
	if err := check(g, o.Placed); err != nil {
		return nil, err
	}
	var asBF16 map[int]bool
	if o.F16AsBF16 {
		// Only Weight types change: the copy must verify as g did.
		g, asBF16 = asBF16Graph(g)
		if err := g.Verify(); err != nil {
			return nil, fmt.Errorf("the graph with F16 weights as BF16 does not verify: %w", err)
		}
	}
	order, err := g.TopoOrder()
	if o.Placed {
		order, err = backends.SplitOrder(g)
	}
	if err != nil {
		return nil, err
	}
	held := &heldMemory{}
	p = &Program{g: g, order: order, vals: make([]value, len(g.Nodes)), maxTokens: o.MaxTokens, threads: o.Threads, logits: g.Outputs["logits"], files: [2]string{o.ModelFile, o.PackedFile}, placed: o.Placed, general: o.General, asBF16: asBF16, held: held}
	// A program dropped without Close frees its memory when collected;
	// one that fails to compile frees it now (after the fault handler
	// below, which runs first).
	runtime.AddCleanup(p, func(h *heldMemory) { _ = h.release() }, held)
	defer func() {
		if err != nil {
			_ = held.release()
		}
	}()
	if o.Placed {
		p.exported = backends.Exported(g, name)
	}
	// Binding decodes F32 vectors from the mapped model file.
	prev := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			p, err = nil, p.fault(r, -1)
		}
	}()
	for _, id := range order {
		if err := p.compileNode(g.Nodes[id], w, o); err != nil {
			return nil, err
		}
	}
	if err := p.assignSlots(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Program) compileNode(n *graph.Node, w WeightSource, o Options) error {
	v := &p.vals[n.ID]
	*v = value{node: n, slot: -1, width: int(n.Type.Shape.Inner().N), kv: -1}
	if p.placed && (backends.Foreign(n, name) || n.Op == "Weight" && !p.readHere(n)) {
		return nil // another backend's
	}
	switch n.Op {
	case "Input":
		return p.compileInput(v)
	case "Weight":
		return p.bindWeight(v, w, o.Packed)
	}
	k, ok := kernels[n.Op]
	if !ok {
		if k, ok = customKernel(n.Op); ok {
			if err := p.prepareCustom(n); err != nil {
				return err
			}
		}
	}
	if !ok {
		return fmt.Errorf("%s: no CPU kernel for op %s", describe(n), n.Op)
	}
	if p.placed && backends.Imported(p.g, n, name) {
		k = runImport
	}
	v.run = k
	if n.Op == ops.Attention {
		v.kv = len(p.attention)
		p.attention = append(p.attention, n.ID)
	}
	if v.elems, ok = maxElems(n.Type, p.maxTokens); !ok {
		return fmt.Errorf("%s: %s for a batch of %d tokens does not fit in memory: use a smaller batch", describe(n), n.Type, p.maxTokens)
	}
	if isView(n) {
		if v.delta, ok = viewDelta(n, p.maxTokens); !ok {
			return fmt.Errorf("%s: offset for a batch of %d tokens overflows: use a smaller batch", describe(n), p.maxTokens)
		}
	}
	need, err := actScratchBytes(p.g, n, p.maxTokens)
	if err != nil {
		return fmt.Errorf("%s: %w", describe(n), err)
	}
	p.actBytes = max(p.actBytes, need)
	if n.Op == ops.MatMulGateUpSwiGLU || n.Op == ops.MatMulGateUpGeGLU || n.Op == ops.MatMulAdd {
		if p.tileBytes, ok = safemath.Product(matmulTile, int64(p.maxTokens), 4); !ok {
			return fmt.Errorf("%s: tile scratch for a batch of %d tokens overflows: use a smaller batch", describe(n), p.maxTokens)
		}
	}
	return nil
}

// readHere reports whether a node the CPU runs reads weight w.
func (p *Program) readHere(w *graph.Node) bool {
	for _, n := range p.g.Nodes {
		if !backends.Foreign(n, name) && slices.Contains(n.Inputs, w.ID) {
			return true
		}
	}
	return false
}

func (p *Program) bindWeight(v *value, w WeightSource, packed []byte) error {
	n := v.node
	t, ok := w.Tensor(n.Tensor)
	if !ok {
		return fmt.Errorf("weight %q is not in the model file", n.Tensor)
	}
	converted := p.asBF16[n.ID] && t.Type == gguf.TypeF16
	if t.Type != n.Type.DType && !converted {
		return fmt.Errorf("weight %q has type %s in the file, %s in the graph", n.Tensor, t.Type, n.Type.DType)
	}
	if !sameDims(n.Type.Shape, t.Dims) {
		return fmt.Errorf("weight %q has dims %v in the file (innermost first), shape %s in the graph", n.Tensor, t.Dims, n.Type.Shape)
	}
	if size, err := gguf.TensorBytes(t.Type, t.Dims); err != nil || size != t.Size {
		return fmt.Errorf("weight %q: %d bytes in the file do not hold its %s %v", n.Tensor, t.Size, t.Type, t.Dims)
	}
	if !quant.Supported(t.Type) {
		return quant.UnsupportedError(n.Tensor, t.Type)
	}
	if n.Layout != nil {
		return bindPacked(v, packed)
	}
	v.raw = w.TensorData(t)
	if uint64(len(v.raw)) != t.Size {
		return fmt.Errorf("weight %q: %d bytes in the file, %d expected", n.Tensor, len(v.raw), t.Size)
	}
	if converted {
		return p.bindBF16(v, w, t, v.raw)
	}
	if len(n.Type.Shape) == 1 && t.Type == gguf.TypeF32 {
		v.vec = make([]float32, len(v.raw)/4)
		for i := range v.vec {
			v.vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(v.raw[4*i:]))
		}
	}
	return nil
}

// bindPacked points a weight at its repacked bytes in the side data; the
// GGUF bytes of it are never touched.
func bindPacked(v *value, side []byte) error {
	n, l := v.node, v.node.Layout
	t, ok := simd.PackedLayoutType(l.Name)
	if !ok || t != n.Type.DType || len(n.Type.Shape) != 2 {
		return fmt.Errorf("weight %q: layout %q does not fit a %s", n.Name, l.Name, n.Type)
	}
	size, err := simd.PackedSize(t, int(n.Type.Shape[0].N), int(n.Type.Shape[1].N))
	if err != nil {
		return fmt.Errorf("weight %q: %w", n.Name, err)
	}
	if l.Size != int64(size) || l.Offset < 0 || l.Offset > int64(len(side)) || l.Size > int64(len(side))-l.Offset {
		if len(side) == 0 {
			return fmt.Errorf("weight %q: layout %s, but the plan has no repacked weights", n.Name, l.Name)
		}
		return fmt.Errorf("weight %q: layout %s range [%d, +%d) does not hold its %d bytes inside the %d-byte repacked data", n.Name, l.Name, l.Offset, l.Size, size, len(side))
	}
	v.raw, v.pack = side[l.Offset:l.Offset+l.Size], true
	return nil
}

// ActivationBytes is the memory one State needs for activations.
func (p *Program) ActivationBytes() int64 {
	return int64(p.arenaLen) * 4 // arenaLen ≤ MaxInt/4 (layOut, plannedSlots)
}

// MaxTokens is the largest batch Run accepts.
func (p *Program) MaxTokens() int { return p.maxTokens }

// Graph returns the compiled graph.
func (p *Program) Graph() *graph.Graph { return p.g }

// slot is one activation buffer: size float32 elements at off in the arena.
// A view slot (parent >= 0) lies delta elements into its parent's slot.
type slot struct {
	off, size     int
	parent, delta int
}

// assignSlots places every computed value in the arena: at the offsets the
// memory plan recorded when the graph carries one sized for this batch,
// else by liveness-based reuse.
func (p *Program) assignSlots() error {
	if m := p.g.Memory; m != nil && m.Tokens == p.maxTokens {
		return p.plannedSlots()
	}
	return p.livenessSlots()
}

// plannedSlots takes each node's buffer from the plan, checking that it
// is aligned, large enough and inside the arena, and that the arena is no
// larger than its buffers; views must lie where their multi-part parent
// writes them.
func (p *Program) plannedSlots() error {
	arena, ok := p.g.Memory.Arenas[Backend{}.Name()]
	if !ok {
		return fmt.Errorf("memory plan: no %s arena", Backend{}.Name())
	}
	if arena < 0 || arena%4 != 0 {
		return fmt.Errorf("memory plan: the %s arena of %d bytes must be a multiple of 4 bytes", Backend{}.Name(), arena)
	}
	if p.arenaLen, ok = safemath.Int(arena / 4); !ok {
		return fmt.Errorf("memory plan: an arena of %d bytes does not fit in memory", arena)
	}
	var used int64
	for _, id := range p.order {
		v := &p.vals[id]
		if v.run == nil || v.node.Op == "Input" {
			continue // F32 inputs lie after the arena (inputSlots)
		}
		b := v.node.Buffer
		need, ok := safemath.Mul(int64(v.elems), 4)
		end, ok2 := int64(0), false
		if b != nil {
			end, ok2 = safemath.Add(b.Offset, b.Size)
		}
		if !ok || !ok2 || b.Offset%4 != 0 || b.Size < need || end > arena {
			return fmt.Errorf("%s: buffer %s does not hold %d values inside the %d-element arena", describe(v.node), bufferString(b), v.elems, p.arenaLen)
		}
		used = max(used, end)
		if isView(v.node) {
			parent := p.g.Nodes[v.node.Inputs[0]]
			if parent.Buffer == nil || b.Offset != parent.Buffer.Offset+4*int64(v.delta) {
				return fmt.Errorf("%s: view buffer is not at its part of node %d", describe(v.node), parent.ID)
			}
		}
		v.slot = len(p.slots)
		p.slots = append(p.slots, slot{off: int(b.Offset / 4), size: v.elems, parent: -1})
	}
	if arena > used+arenaSlack {
		return fmt.Errorf("memory plan: the %s arena of %d bytes is larger than its buffers need (%d bytes)", Backend{}.Name(), arena, used)
	}
	return p.inputSlots()
}

// arenaSlack is how far a planned arena may extend past its last buffer
// (the memory plan's alignment).
const arenaSlack = 64

func bufferString(b *graph.Buffer) string {
	if b == nil {
		return "(none)"
	}
	return fmt.Sprintf("[%d, +%d)", b.Offset, b.Size)
}

// livenessSlots gives every computed value a slot, reusing a slot once all
// readers of its previous value (and of views into it) have run, then lays
// the slots out one after another. Sizes are for the largest batch.
func (p *Program) livenessSlots() error {
	lastUse := p.lastUses()
	var free []int
	for step, id := range p.order {
		v := &p.vals[id]
		switch {
		case v.run != nil && isView(v.node):
			parent := p.vals[v.node.Inputs[0]].slot
			v.slot = len(p.slots)
			p.slots = append(p.slots, slot{size: v.elems, parent: parent, delta: v.delta})
		case v.run != nil:
			v.slot = p.takeSlot(&free, v.elems)
		}
		for _, in := range p.g.Nodes[id].Inputs {
			if isView(p.g.Nodes[in]) {
				in = p.g.Nodes[in].Inputs[0]
			}
			s := p.vals[in].slot
			if lastUse[in] == step && s >= 0 && p.slots[s].parent < 0 && !slices.Contains(free, s) {
				free = append(free, s)
			}
		}
	}
	return p.layOut()
}

// lastUses returns each node's last reading step; a view's readers keep
// its parent alive, and the logits live past the end.
func (p *Program) lastUses() []int {
	lastUse := make([]int, len(p.vals))
	for step, id := range p.order {
		for _, in := range p.g.Nodes[id].Inputs {
			lastUse[in] = step
		}
	}
	lastUse[p.logits] = len(p.order)
	for _, id := range p.g.Outputs {
		lastUse[id] = len(p.order)
	}
	for i := len(p.order) - 1; i >= 0; i-- {
		if n := p.g.Nodes[p.order[i]]; isView(n) {
			lastUse[n.Inputs[0]] = max(lastUse[n.Inputs[0]], lastUse[n.ID])
		}
	}
	return lastUse
}

// layOut places root slots back to back and views inside their parents.
func (p *Program) layOut() error {
	total := int64(0)
	for i := range p.slots {
		if p.slots[i].parent < 0 {
			p.slots[i].off = int(total)
			var ok bool
			if total, ok = safemath.Add(total, int64(p.slots[i].size)); !ok || total > math.MaxInt/4 {
				return fmt.Errorf("the activations for a batch of %d tokens do not fit in memory: use a smaller batch", p.maxTokens)
			}
		}
	}
	p.arenaLen = int(total)
	for i := range p.slots {
		if s := &p.slots[i]; s.parent >= 0 {
			s.off = p.slots[s.parent].off + s.delta
		}
	}
	return nil
}

// takeSlot picks the smallest free root slot of at least need elements,
// growing the largest free slot or making a new one otherwise.
func (p *Program) takeSlot(free *[]int, need int) int {
	best := -1
	for i, s := range *free {
		if p.slots[s].size >= need && (best < 0 || p.slots[s].size < p.slots[(*free)[best]].size) {
			best = i
		}
	}
	if best < 0 && len(*free) > 0 {
		best = 0
		for i, s := range *free {
			if p.slots[s].size > p.slots[(*free)[best]].size {
				best = i
			}
		}
		p.slots[(*free)[best]].size = need
	}
	if best < 0 {
		p.slots = append(p.slots, slot{size: need, parent: -1})
		return len(p.slots) - 1
	}
	s := (*free)[best]
	*free = append((*free)[:best], (*free)[best+1:]...)
	return s
}

// sameDims reports whether a graph shape (outermost first) is a GGUF
// tensor's dims (innermost first).
func sameDims(sh graph.Shape, dims []uint64) bool {
	if len(sh) != len(dims) {
		return false
	}
	for i, d := range sh {
		if d.IsSym() || d.N < 0 || uint64(d.N) != dims[len(dims)-1-i] {
			return false
		}
	}
	return true
}
