//go:build linux && (amd64 || arm64)

package vulkan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/shaders"
)

// Executable is a graph loaded onto a device (backends.Program): weights
// uploaded once, kernels created, the activation arena planned. It is
// shared by every Session of a model.
type Executable struct {
	d          *Device
	ownsDevice bool
	beforeFree func() // stores the pipeline cache (Load)

	weightBytes, uploaded int64                   // for Progress
	progress              func(done, total int64) // LoadOptions.Progress
	g                     *graph.Graph
	order                 []int
	vals                  []value
	maxTokens             int
	arenaElems            int64 // activation arena, float32 elements
	q8Words               int64 // Q8_0 activation scratch, words
	logits                int   // output node
	attention             []int // Attention nodes, in KV-cache order
	ropes                 []ropeParams
	shifts                []shiftParams // per attention layer: how a context shift rotates its keys
	weights               []*Buffer
	grids                 map[gguf.TensorType]*Buffer // lattice tables by weight type (shaders.GridTable)

	// normQuant names, per RMSNormMul node whose every reader is a matmul
	// taking one kind of activations, that kind: the norm writes them
	// itself (fusedNormQuant).
	normQuant map[int]string
	// users lists each node's readers (graph.Users).
	users [][]int
	// normFold maps each MatMulAdd that writes a folded RMSNormMul's
	// input to that norm: the norm's decode-step dispatch is folded into
	// the matvecs around it (foldNorms), the MatMulAdd writing its blocks
	// (normOut).
	normFold map[int]int
	// ropeKV holds, per Attention node, the RoPE nodes its KV store
	// dispatch runs itself (fuseRoPEKV); deferred marks those RoPE nodes,
	// which record no dispatch of their own.
	ropeKV   map[int]ropeKV
	deferred map[int]bool
	// packs holds, per MatMulQKV node, the buffer its three weights share
	// (packQKV); packOf finds a packed weight's pack and part.
	packs    map[int]*qkvPack
	packOf   map[int]qkvPart
	placed   bool   // LoadOptions.Placed: only the nodes placed here are loaded
	exported []bool // placed: nodes whose values a Copy on another backend reads

	mu      sync.Mutex
	kernels map[string]*Kernel
}

// value is where a node's data lives.
type value struct {
	n         *graph.Node
	width     int       // elements per row
	kind      valKind   // where it lives
	off       int64     // arena: element offset; input: word offset in the step buffer
	w         []*Buffer // weight: one buffer, or row chunks (weightChunks)
	wOff      int64     // weight: byte offset in w[0] (a packed MatMulQKV weight; else 0)
	chunkRows int       // weight: rows per buffer of w
	kv        int       // Attention: index of its KV cache pair
	rope      int       // RoPE: index into ropes
	active    bool      // computed by a kernel (not a view, input or weight)
	import_   bool      // a Copy of a value another backend computed: uploaded from the Exchange
}

type valKind int

const (
	kindNone valKind = iota
	kindInput
	kindWeight
	kindArena
	kindLogits
)

// ropeParams are one set of RoPE attributes (with the values of its
// frequency factors), with its own cos/sin table.
type ropeParams struct {
	ref.RoPE
	key string // equal for equal rotations: nodes share a table
}

// Step buffer layout (32-bit words): tokens, positions and rows of the
// batch, then each token's first KV cell (its sequence times the context:
// the sequences' cells lie one after another in each layer's cache),
// maxTokens words each.
func (e *Executable) stepWords() int64 { return 4 * int64(e.maxTokens) }

// cellWords is the step buffer's word offset of the tokens' first cells.
func (e *Executable) cellWords() int { return 3 * e.maxTokens }

// LoadOn loads g onto d. Every node of g runs here (placement is not
// consulted) unless o.Placed: then only the nodes placed on "vulkan" are
// loaded, and values cross to and from the other backends' splits through
// Copy nodes (Session.RunSplit). Weights are read from w's GGUF bytes,
// whatever Layout the plan gave them.
func LoadOn(d *Device, g *graph.Graph, w backends.Weights, o backends.LoadOptions) (e *Executable, err error) {
	if o.MaxTokens <= 0 {
		o.MaxTokens = 512
	}
	if err := g.Verify(); err != nil {
		return nil, err
	}
	order, err := g.TopoOrder()
	if o.Placed {
		order, err = backends.SplitOrder(g)
	}
	if err != nil {
		return nil, err
	}
	out, ok := g.Outputs["logits"]
	if !ok {
		return nil, errors.New("graph has no \"logits\" output")
	}
	e = &Executable{d: d, g: g, order: order, vals: make([]value, len(g.Nodes)), maxTokens: o.MaxTokens, logits: out, kernels: map[string]*Kernel{}, placed: o.Placed}
	if o.Placed {
		e.exported = backends.Exported(g, name)
	}
	defer func() {
		if err != nil {
			e.free()
			e = nil
		}
	}()
	if err := e.checkMemory(w); err != nil {
		return e, err
	}
	e.progress = o.Progress
	e.packQKV(w)
	for _, id := range order {
		n := g.Nodes[id]
		if e.placed && (backends.Foreign(n, name) || n.Op == "Weight" && !e.readHere(n)) {
			e.vals[id] = value{n: n, kv: -1, rope: -1} // another backend's
			continue
		}
		if err := (Backend{}).Supports(n, g); err != nil {
			return e, fmt.Errorf("node %d (%s %q): %w", n.ID, n.Op, n.Name, err)
		}
		if err := e.prepare(n, w); err != nil {
			return e, fmt.Errorf("node %d (%s %q): %w", n.ID, n.Op, n.Name, err)
		}
	}
	if (e.vals[out].kind != kindArena || !e.vals[out].active) && !(e.placed && backends.Foreign(g.Nodes[out], name)) {
		return e, errors.New("the logits output is not a computed value")
	}
	e.fuseRoPEKV()
	e.planArena()
	e.users = g.Users()
	e.normQuant = fusedNormQuant(g, e.order, func(id int) bool { return e.vals[id].active && !e.vals[id].import_ })
	e.foldNorms()
	e.sizeTileTails()
	// Weights stream through the staging ring: the last copies may still
	// be running, and their errors are Load's.
	return e, e.d.WaitUploads()
}

// readHere reports whether a node placed on Vulkan reads weight w.
func (e *Executable) readHere(w *graph.Node) bool {
	for _, n := range e.g.Nodes {
		if !backends.Foreign(n, name) && slices.Contains(n.Inputs, w.ID) {
			return true
		}
	}
	return false
}

// ropeOf is a RoPE node's rotation, its frequency factors read from the
// weights: the angles are tabulated on the host (Session.uploadRoPETables).
func (e *Executable) ropeOf(n *graph.Node, w backends.Weights) (ropeParams, error) {
	var factors []float32
	if len(n.Inputs) == 3 {
		f := e.vals[n.Inputs[2]].n
		t, ok := w.Tensor(f.Tensor)
		if f.Op != "Weight" || !ok || t.Type != gguf.TypeF32 {
			return ropeParams{}, fmt.Errorf("RoPE %q: its frequency factors must be an F32 weight", n.Name)
		}
		data := w.TensorData(t)
		factors = make([]float32, len(data)/4)
		for i := range factors {
			factors[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	}
	r := ops.RoPEOf(n.Attrs, factors)
	a := n.Attrs
	key := fmt.Sprint(r.Dims, r.Base, r.FreqScale, a["ext_factor"], a["attn_factor"], a["corr_lo"], a["corr_hi"], factors)
	r.NeoX = false // the shader pairs elements; the table is the same for both
	return ropeParams{RoPE: r, key: key}, nil
}

func (e *Executable) prepare(n *graph.Node, w backends.Weights) error {
	v := &e.vals[n.ID]
	*v = value{n: n, width: int(n.Type.Shape.Inner().N), kv: -1, rope: -1}
	switch n.Op {
	case "Input":
		v.kind = kindInput
		switch n.Name {
		case "tokens":
			v.off = 0
		case "positions":
			v.off = int64(e.maxTokens)
		case "rows":
			v.off = 2 * int64(e.maxTokens)
		default:
			return fmt.Errorf("unknown graph input %q", n.Name)
		}
		return nil
	case "Weight":
		return e.upload(v, w)
	case ops.Part:
		v.kind = kindArena
		return nil
	case ops.Copy:
		src := &e.vals[n.Inputs[0]]
		switch {
		case src.kind == kindInput:
			// A graph input copied to this backend: the host writes it
			// into the step buffer, which the shaders read directly.
			v.kind, v.off = kindInput, src.off
			return nil
		case e.placed && backends.Imported(e.g, n, name):
			// Computed by another backend: uploaded into the arena
			// before this split runs (Session.RunSplit).
			v.import_ = true
		case src.kind != kindArena && src.kind != kindLogits:
			return fmt.Errorf("a copy of %s %q, which is neither a graph input nor a computed value", src.n.Op, src.n.Name)
		}
	case ops.Attention:
		v.kv = len(e.attention)
		e.attention = append(e.attention, n.ID)
		e.shifts = append(e.shifts, e.shiftOf(n, w))
	case ops.RoPE:
		r, err := e.ropeOf(n, w)
		if err != nil {
			return err
		}
		v.rope = slices.IndexFunc(e.ropes, func(q ropeParams) bool { return q.key == r.key })
		if v.rope < 0 {
			v.rope = len(e.ropes)
			e.ropes = append(e.ropes, r)
		}
	}
	if n.Type.DType != graph.F32 {
		return fmt.Errorf("result of type %s", n.Type.DType)
	}
	v.kind, v.active = kindArena, true
	// The activation scratch: Q8_0 blocks (9 words per 32 values), Q8_1
	// blocks (10 words per 32), Q8_K blocks (73 words per 256) or
	// binary16- or bfloat16-rounded values (one word each). A node's weights take one kind of activations (Supports), so
	// one conversion serves them all.
	for _, id := range ops.MatMulWeights(n) {
		wt := e.g.Nodes[id]
		words := actWords(actKind(wt.Type.DType), wt.Type.Shape[1].N)
		if coopPairs(n, wt.Type.DType) {
			words = max(words, actWords("f16", wt.Type.Shape[1].N)) // binary16 pairs on tensor cores
		}
		// Room for two tokens' worth too: a decode step's gate·up writes
		// the FFN down's activations beside its own (gateUpTail), also
		// when the session runs one token at a time.
		// And for a folded norm's blocks beside the down's (normOut).
		e.q8Words = max(e.q8Words, int64(e.maxTokens)*words, 3*words+128)
	}
	return nil
}

// actWords is the scratch words of one token's activations of kind for
// rows of cols values (0 for float32, which needs none).
func actWords(kind string, cols int64) int64 {
	switch kind {
	case "q8_0":
		return cols / 32 * 9
	case "q8_1":
		return cols / 32 * 10
	case "q8_k":
		return cols / 256 * 73
	case "f16", "bf16":
		return cols
	}
	return 0
}

// upload copies a weight's GGUF bytes to its own device buffer.
func (e *Executable) upload(v *value, w backends.Weights) error {
	n := v.n
	t, ok := w.Tensor(n.Tensor)
	if !ok {
		return fmt.Errorf("weight %q is not in the model file", n.Tensor)
	}
	if t.Type != n.Type.DType {
		return fmt.Errorf("weight %q has type %s in the file, %s in the graph", n.Tensor, t.Type, n.Type.DType)
	}
	data := w.TensorData(t)
	if p, ok := e.packOf[n.ID]; ok {
		return e.uploadPacked(v, p, data)
	}
	parts, rows, err := weightChunks(n, int64(len(data)), e.weightLimit())
	if err != nil {
		return fmt.Errorf("weight %q: %w on %s", n.Tensor, err, e.d.info.Name)
	}
	v.kind, v.chunkRows = kindWeight, rows
	for i, part := range parts {
		chunk := data[part[0]:part[1]]
		b, err := e.d.Alloc(max((int64(len(chunk))+3)&^3, 4))
		if err != nil {
			return fmt.Errorf("weight %q: %w", n.Tensor, err)
		}
		e.weights = append(e.weights, b)
		v.w = append(v.w, b)
		if len(chunk)%4 != 0 {
			chunk = append(slices.Clip(chunk), make([]byte, 4-len(chunk)%4)...)
		}
		if err := e.d.Upload(b, 0, chunk); err != nil {
			return fmt.Errorf("weight %q (part %d of %d): %w", n.Tensor, i+1, len(parts), err)
		}
		if e.uploaded += int64(len(chunk)); e.progress != nil {
			e.progress(e.uploaded, e.weightBytes)
		}
	}
	return e.uploadGrid(n.Type.DType)
}

// uploadGrid uploads the lattice table the shaders of weight type t read
// (once per type), if it has one.
func (e *Executable) uploadGrid(t gguf.TensorType) error {
	words, ok := shaders.GridTable(t)
	if !ok || e.grids[t] != nil {
		return nil
	}
	b, err := e.d.Alloc(4 * int64(len(words)))
	if err != nil {
		return fmt.Errorf("%s lattice table: %w", t, err)
	}
	e.weights = append(e.weights, b) // freed with them
	raw := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(raw[4*i:], w)
	}
	if err := e.d.Upload(b, 0, raw); err != nil {
		return fmt.Errorf("%s lattice table: %w", t, err)
	}
	if e.grids == nil {
		e.grids = map[gguf.TensorType]*Buffer{}
	}
	e.grids[t] = b
	return nil
}

// withGrid appends the lattice table of weight type t to a dispatch's
// buffers when its shaders take one (their last binding).
func (e *Executable) withGrid(t gguf.TensorType, bufs ...Range) []Range {
	if b := e.grids[t]; b != nil {
		return append(bufs, Whole(b))
	}
	return bufs
}

// weightLimit is the largest buffer a weight may take: the device's
// storage-buffer range (lavapipe: 128 MiB), or less in tests.
func (e *Executable) weightLimit() int64 {
	if testWeightLimit > 0 {
		return testWeightLimit
	}
	return int64(e.d.info.MaxStorageBufferRange)
}

// testNoFusion turns off the RoPE·KV store, the RMSNorm·w with Q8_K
// activations and the packed QKV weights, so tests can compare both ways
// bit for bit.
var testNoFusion bool

// testNoTileTail turns off gateUpTileTail alone, so a test can compare
// the prefill gate·up writing its down's activations with the quantize
// dispatch it saves.
var testNoTileTail bool

// testNoNormFold turns off foldNorms alone (its numerics differ from the
// norm dispatch's, so the bit-for-bit fusion test keeps it off).
var testNoNormFold bool

// testWeightLimit, when positive, replaces the storage-buffer range for
// weights, so tests split small models' weights.
var testWeightLimit int64

// weightChunks cuts a weight of size bytes into byte ranges that fit a
// buffer of limit bytes: whole rows, a multiple of 4 rows per chunk (so
// every chunk starts on a word), each read by its own dispatch of the
// matmul and row-gather shaders. rows is the rows per chunk.
func weightChunks(n *graph.Node, size, limit int64) (parts [][2]int64, rows int, err error) {
	if (size+3)&^3 <= limit || len(n.Type.Shape) != 2 {
		if (size+3)&^3 > limit {
			return nil, 0, fmt.Errorf("%d MiB exceeds the storage-buffer range of %d MiB", size>>20, limit>>20)
		}
		return [][2]int64{{0, size}}, int(n.Type.Shape[0].N), nil
	}
	total := n.Type.Shape[0].N
	rowBytes := size / total
	per := (limit - 4) / rowBytes &^ 3
	if per <= 0 {
		return nil, 0, fmt.Errorf("4 rows of %d bytes exceed the storage-buffer range of %d bytes", rowBytes, limit)
	}
	for r := int64(0); r < total; r += per {
		parts = append(parts, [2]int64{r * rowBytes, min(r+per, total) * rowBytes})
	}
	return parts, int(per), nil
}

// maxElems is the number of elements of t for a batch of maxTokens.
func maxElems(t graph.Type, maxTokens int) int64 {
	if len(t.Shape) > 0 && !t.Shape[0].IsSym() {
		return t.Shape[0].N * t.Shape.PerRow()
	}
	return t.Shape.PerRow() * int64(maxTokens)
}

// arenaAlign aligns every block of the arena (elements).
const arenaAlign = 64

// planArena gives every computed value a block of the arena, reusing a
// block once all readers of its value (and of views into it) have run. A
// result never shares a block with its own operands, so no kernel has to
// allow aliasing. Parts lie in their MatMulQKV parent's block, each part
// sized for maxTokens rows. The logits go to the Session's read-back
// buffer instead.
func (e *Executable) planArena() {
	g := e.g
	lastUse := make([]int, len(e.vals))
	for step, id := range e.order {
		for _, in := range e.reads(id) {
			lastUse[in] = step
		}
	}
	for i := len(e.order) - 1; i >= 0; i-- {
		if n := g.Nodes[e.order[i]]; n.Op == ops.Part {
			lastUse[n.Inputs[0]] = max(lastUse[n.Inputs[0]], lastUse[n.ID])
		}
	}
	type block struct{ off, size int64 }
	var free []block
	var end int64
	take := func(need int64) int64 {
		need = (need + arenaAlign - 1) / arenaAlign * arenaAlign
		best := -1
		for i, b := range free {
			if b.size >= need && (best < 0 || b.size < free[best].size) {
				best = i
			}
		}
		if best < 0 {
			off := end
			end += need
			return off
		}
		off := free[best].off
		if free[best].size > need {
			free[best] = block{off + need, free[best].size - need}
		} else {
			free = slices.Delete(free, best, best+1)
		}
		return off
	}
	sizes := map[int64]int64{}
	for step, id := range e.order {
		n := g.Nodes[id]
		v := &e.vals[id]
		switch {
		case n.Op == ops.Part:
			v.off = e.vals[n.Inputs[0]].off + int64(n.Attrs.Int("start"))*int64(e.maxTokens)
		case id == e.logits:
			v.kind = kindLogits
		case v.active:
			size := maxElems(n.Type, e.maxTokens)
			v.off = take(size)
			sizes[v.off] = (size + arenaAlign - 1) / arenaAlign * arenaAlign
		}
		for _, in := range e.reads(id) {
			if g.Nodes[in].Op == ops.Part {
				in = g.Nodes[in].Inputs[0]
			}
			u := &e.vals[in]
			if lastUse[in] == step && u.kind == kindArena && u.active {
				if s, ok := sizes[u.off]; ok {
					free = append(free, block{u.off, s})
					delete(sizes, u.off)
				}
			}
		}
	}
	e.arenaElems = max(end, arenaAlign)
}

// reads lists the values node id's dispatches read, for the arena's
// lifetimes: its inputs, but none for a RoPE whose Attention rotates it,
// and for that Attention the RoPEs' inputs as well.
func (e *Executable) reads(id int) []int {
	n := e.g.Nodes[id]
	if e.deferred[id] {
		return nil
	}
	f, ok := e.ropeKV[id]
	if !ok {
		return n.Inputs
	}
	in := slices.Clone(n.Inputs)
	for _, r := range []int{f.q, f.k} {
		if r >= 0 {
			in = append(in, e.g.Nodes[r].Inputs...)
		}
	}
	return in
}

// MaxTokens is the largest batch a Session runs.
func (e *Executable) MaxTokens() int { return e.maxTokens }

// ActivationBytes is the device memory one Session needs for activations.
func (e *Executable) ActivationBytes() int64 { return 4 * (e.arenaElems + e.q8Words) }

// Device returns the device the graph is loaded on.
func (e *Executable) Device() *Device { return e.d }

// kernel returns the named shader's pipeline, created on first use.
// NAME#V is NAME with specialization constant 1 set to V (matvec's tokens
// per workgroup), NAME#V,U constants 1 and 2 (matvec's rows per
// workgroup), and so on; a suffix @W sets its workgroup size
// (specialization constant 0) to W instead of the shader index's.
func (e *Executable) kernel(name string) (*Kernel, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if k := e.kernels[name]; k != nil {
		return k, nil
	}
	rest, wg, sized := strings.Cut(name, "@")
	base, v, specialized := strings.Cut(rest, "#")
	s, err := shaders.Lookup(base)
	if err != nil {
		return nil, err
	}
	workgroup := uint32(s.Workgroup)
	if sized {
		n, err := strconv.ParseUint(wg, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("kernel %q: %w", name, err)
		}
		workgroup = uint32(n)
	}
	var spec []uint32
	if specialized {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("kernel %q: %w", name, err)
			}
			spec = append(spec, uint32(n))
		}
	}
	k, err := e.d.NewKernel(KernelSpec{Name: s.Name, SPIRV: s.SPIRV, Bindings: s.Bindings, PushBytes: s.PushBytes, Workgroup: workgroup, Spec: spec})
	if err != nil {
		return nil, err
	}
	e.kernels[name] = k
	return k, nil
}

// Close releases the weights and kernels (and the device, when Load
// opened it). Every Session must be closed first.
func (e *Executable) Close() error {
	if e == nil || e.d == nil {
		return nil
	}
	if err := e.d.dev.WaitIdle(); err != nil {
		return err
	}
	e.free()
	return nil
}

func (e *Executable) free() {
	if e.beforeFree != nil {
		e.beforeFree()
	}
	_ = e.d.WaitUploads() // no copy may still write a buffer freed below
	for _, k := range e.kernels {
		k.Close()
	}
	for _, b := range e.weights {
		b.Free()
	}
	e.kernels, e.weights = nil, nil
	if e.ownsDevice {
		e.d.Close()
	}
	e.d = nil
}

// checkMemory refuses a model whose weights alone exceed the device's
// largest device-local heap, saying both sizes, before anything is
// uploaded.
func (e *Executable) checkMemory(w backends.Weights) error {
	for _, n := range e.g.Nodes {
		if n.Op != "Weight" || e.placed && !e.readHere(n) {
			continue
		}
		if t, ok := w.Tensor(n.Tensor); ok {
			e.weightBytes += int64(len(w.TensorData(t)))
		}
	}
	have := int64(e.d.info.DeviceLocalBytes)
	if have > 0 && e.weightBytes > have {
		return fmt.Errorf("the weights need %.2f GiB of device memory, but %s has %.2f GiB: use --backend cpu, or a smaller or more quantized model",
			float64(e.weightBytes)/(1<<30), e.d.info.Name, float64(have)/(1<<30))
	}
	return nil
}

// kvBytes is the device memory of a session's KV cache of ctx positions.
func (e *Executable) kvBytes(ctx int, kv backends.KVType) int64 {
	var n int64
	for _, id := range e.attention {
		a := e.g.Nodes[id].Attrs
		n += 2 * int64(ctx) * kvRowBytes(kv, a.Int("kv_heads")*a.Int("head_dim"))
	}
	return n
}

// kvRowBytes is the size of one KV cache row (one cell of every KV head)
// of width values: float32 or binary16 values, or Q8_0/Q4_0 blocks padded
// to whole words (kvquant.glsl: the store shaders write whole words).
func kvRowBytes(kv backends.KVType, width int) int64 {
	w := int64(width)
	switch kv {
	case backends.KVF32:
		return 4 * w
	case backends.KVQ8_0:
		return (w/32*34 + 3) &^ 3
	case backends.KVQ4_0:
		return (w/32*18 + 3) &^ 3
	}
	return 2 * w
}

// checkSessionMemory refuses, before allocating anything, a session whose
// KV cache and activations do not fit in the device's largest heap
// beside the weights, saying every size and what to change.
func (e *Executable) checkSessionMemory(ctx int, kv backends.KVType) error {
	have := int64(e.d.info.DeviceLocalBytes)
	kvb, act := e.kvBytes(ctx, kv), 4*(e.arenaElems+e.q8Words)
	if have == 0 || e.weightBytes+kvb+act <= have {
		return nil
	}
	hint := "use a smaller --ctx"
	switch kv {
	case backends.KVF32:
		hint += " or --kv-type f16"
	case backends.KVF16:
		hint += " or --flash-attn --kv-type q8_0"
	}
	return fmt.Errorf("vulkan: a session of %d positions needs %s of device memory (KV cache %s, activations %s for %d tokens), but %s has %s beside the weights' %s: %s, or --backend cpu",
		ctx, mib(kvb+act), mib(kvb), mib(act), e.maxTokens, e.d.info.Name, mib(max(have-e.weightBytes, 0)), mib(e.weightBytes), hint)
}

// mib formats a byte count in MiB (GiB from 10 GiB on).
func mib(n int64) string {
	if n >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20)
}

// fusedNormQuant finds the nodes that write their readers' activations
// themselves: an RMSNormMul whose results only matmuls read, as their
// activations input, all taking Q8_0, Q8_1, binary16- or bfloat16-rounded
// activations of one kind (rms_norm_mul_KIND; Q8_K too for rows of whole
// super-blocks of 256), and an Attention whose heads are whole blocks of
// 32 read only by such matmuls taking Q8_0 or Q8_1 (attention_KV_KIND),
// and a MatMulGateUpSwiGLU whose rows are whole blocks read only by such
// matmuls (the FFN down; only a decode step's writes them, gateUpTail).
// Those matmuls skip their quantization dispatch. A gate·up's, and an
// Attention's Q8_K (a super-block spans heads), are written only by a
// decode step's dispatch, whose last workgroup of each block quantizes
// it (gateUpTail, ropeInAttention); other steps quantize them apart.
// here reports whether this backend runs a node.
func fusedNormQuant(g *graph.Graph, order []int, here func(int) bool) map[int]string {
	users := g.Users()
	out := map[int]string{}
	for _, id := range order {
		n := g.Nodes[id]
		kinds := []string{"q8_0", "q8_1", "f16", "bf16"}
		width := int(n.Type.Shape.Inner().N)
		switch {
		case n.Op == ops.Attention && n.Attrs.Int("head_dim")%32 == 0:
			kinds = kinds[:2]
			if hd := n.Attrs.Int("head_dim"); 256%hd == 0 && width%256 == 0 && !testNoFusion {
				kinds = append(kinds, "q8_k") // a decode step's, whole heads a super-block (attentionTail)
			}
		case n.Op == ops.MatMulGateUpSwiGLU && width%32 == 0 && !testNoFusion:
			kinds = kinds[:2] // a decode step's (gateUpTail)
			if width%256 == 0 {
				kinds = append(kinds, "q8_k")
			}
		case n.Op != ops.RMSNormMul || width%32 != 0:
			continue
		case width%256 == 0 && ops.NormGroup(n.Attrs, width) == width && !testNoFusion:
			kinds = append(kinds, "q8_k") // whole super-blocks of whole rows
		}
		if !here(id) || id == g.Outputs["logits"] || len(users[id]) == 0 {
			continue
		}
		kind := ""
		for _, u := range users[id] {
			un := g.Nodes[u]
			ws := ops.MatMulWeights(un)
			if len(ws) == 0 || !here(u) || un.Inputs[0] != id {
				kind = ""
				break
			}
			k := actKind(g.Nodes[ws[0]].Type.DType)
			if !slices.Contains(kinds, k) || kind != "" && k != kind {
				kind = ""
				break
			}
			kind = k
		}
		if kind != "" {
			out[id] = kind
		}
	}
	return out
}

// gateUpTileKernel is the variant of a prefill gate·up n taking shader
// that also writes its FFN down's activations (gateUpTileTail), if n and
// the device have one: fusedNormQuant chose Q8_0 or Q8_1 activations for
// the down, the tiles are matmul_tiled's or matmul_coop's, the rows whole
// blocks.
func (e *Executable) gateUpTileKernel(n *graph.Node, shader string) (string, bool) {
	kind := e.normQuant[n.ID]
	ws := ops.MatMulWeights(n)
	if testNoTileTail || n.Op != ops.MatMulGateUpSwiGLU || shader != "matmul_coop" && shader != "matmul_tiled" || kind != "q8_0" && kind != "q8_1" || len(ws) != 2 {
		return "", false
	}
	w := e.g.Nodes[ws[0]]
	if w.Type.Shape[0].N%32 != 0 {
		return "", false
	}
	name := shader + "_gateup_" + weightKernel[w.Type.DType] + "_" + kind
	if _, err := shaders.Lookup(name); err != nil {
		return "", false
	}
	return name, true
}

// tileTailWords is the scratch words of a gate·up n's own activations and
// of its down's at ntok tokens.
func (e *Executable) tileTailWords(n *graph.Node, ntok int) (own, down int64) {
	w := e.g.Nodes[ops.MatMulWeights(n)[0]]
	own = actWords(actKind(w.Type.DType), w.Type.Shape[1].N) * int64(ntok)
	down = actWords(e.normQuant[n.ID], w.Type.Shape[0].N) * int64(ntok)
	return own, down
}

// sizeTileTails makes room in the activation scratch for the prefill
// gate·ups that write their downs' activations beside their own
// (gateUpTileTail).
func (e *Executable) sizeTileTails() {
	if !e.tiles(e.maxTokens) {
		return
	}
	for _, id := range e.order {
		n := e.g.Nodes[id]
		if n.Op != ops.MatMulGateUpSwiGLU || !e.vals[id].active {
			continue
		}
		shader, _ := e.matmulShader(n, e.maxTokens)
		if _, ok := e.gateUpTileKernel(n, shader); !ok {
			continue
		}
		own, down := e.tileTailWords(n, e.maxTokens)
		e.q8Words = max(e.q8Words, own+64+down)
	}
}

// normFoldOut names, per kind of activations a folded norm writes, the
// suffix of its producer's matvec.comp NORM_OUT variant
// (matvec_add_T_nq: Q8_0 blocks; _nqk: Q8_K super-blocks, NORM_K).
var normFoldOut = map[string]string{"q8_0": "_nq", "q8_k": "_nqk"}

// foldNorms finds the RMSNormMul nodes whose decode-step dispatch the
// matvecs around them do (matvec.comp NORM_OUT, NORM_IN): the norm, over
// whole rows of blocks of 32 (Q8_0) or super-blocks of 256 (Q8_K),
// writes those activations (normQuant) for one reader, a MatMul, a
// MatMulQKV (packed or not) or a MatMulGateUpSwiGLU writing no
// activations or its down's of a kind it has a NORM_IN variant for; its
// input is a MatMulAdd's (the residual stream); every weight of the
// producer has a NORM_OUT variant writing that kind, every reader weight
// a NORM_IN variant, and the three run one after another. The
// MatMulAdd's last workgroup of each block then writes the block of h·w
// and the Σh² of each 32 rows, and the reader scales the blocks by the
// norm's factor: a decode step saves the norm's dispatch and barrier
// (about 5 µs; sessions 19 and 20, docs/benchmarks-vulkan.md).
func (e *Executable) foldNorms() {
	e.normFold = map[int]int{}
	if testNoFusion || testNoNormFold || e.placed {
		return
	}
	g := e.g
	users := g.Users()
	// next is the node recorded after position i (deferred and
	// inactive nodes record nothing), or -1.
	pos := map[int]int{}
	for i, id := range e.order {
		pos[id] = i
	}
	next := func(id int) int {
		for _, n := range e.order[pos[id]+1:] {
			if v := &e.vals[n]; v.active && !v.import_ && !e.deferred[n] {
				return n
			}
		}
		return -1
	}
	// has: every weight of n has kernel prefix+T+suffix.
	has := func(n *graph.Node, prefix, suffix string) bool {
		for _, w := range ops.MatMulWeights(n) {
			if _, err := shaders.Lookup(prefix + weightKernel[g.Nodes[w].Type.DType] + suffix); err != nil {
				return false
			}
		}
		return len(ops.MatMulWeights(n)) > 0
	}
	folded := map[string]int{} // per kind, the width of the norms folded (one counter region)
	for _, id := range e.order {
		kind := e.normQuant[id]
		n := g.Nodes[id]
		width := int(n.Type.Shape.Inner().N)
		block := map[string]int{"q8_0": 32, "q8_k": 256}[kind]
		if n.Op != ops.RMSNormMul || block == 0 || ops.NormGroup(n.Attrs, width) != width || width%block != 0 || len(users[id]) != 1 || folded[kind] != 0 && width != folded[kind] {
			continue
		}
		p, u := g.Nodes[n.Inputs[0]], g.Nodes[users[id][0]]
		if p.Op != ops.MatMulAdd || !has(p, "matvec_add_", normFoldOut[kind]) || !e.vals[p.ID].active || e.vals[p.ID].import_ || next(p.ID) != id || next(id) != u.ID {
			continue
		}
		switch u.Op {
		case ops.MatMul:
			if !has(u, "matvec_nq_", "") {
				continue
			}
		case ops.MatMulQKV:
			// Packed: one matvec_qkv_nq_T; else one matvec_nq_T a part.
			if e.packs[u.ID] != nil && !has(u, "matvec_qkv_nq_", "") || e.packs[u.ID] == nil && !has(u, "matvec_nq_", "") {
				continue
			}
		case ops.MatMulGateUpSwiGLU:
			suffix := ""
			if k := e.normQuant[u.ID]; k != "" {
				suffix = "_" + k
			}
			if !has(u, "matvec_gateup_nq_", suffix) {
				continue
			}
		default:
			continue
		}
		e.normFold[p.ID] = id
		folded[kind] = width
	}
}

// tailCounters is the words of counters, per region, the nodes that
// write their readers' activations from a last workgroup need: a gate·up
// writing the FFN down's Q8_0/Q8_1 (a block of 32 rows each) or Q8_K (a
// super-block of 256 rows; gateUpTail), an Attention writing Q8_K (a
// super-block of 256 values each). Each region counts modulo its own
// number of workgroups, so they lie apart.
func (e *Executable) tailCounters() (words [tailKinds]int64) {
	for id, kind := range e.normQuant {
		switch node := e.g.Nodes[id]; {
		case node.Op == ops.MatMulGateUpSwiGLU && kind == "q8_k":
			words[tailGateUpK] = max(words[tailGateUpK], node.Type.Shape.Inner().N/256)
		case node.Op == ops.MatMulGateUpSwiGLU:
			words[tailGateUp] = max(words[tailGateUp], (node.Type.Shape.Inner().N+31)/32)
		case node.Op == ops.Attention && kind == "q8_k":
			words[tailAttention] = max(words[tailAttention], node.Type.Shape.Inner().N/256)
		}
	}
	for _, id := range e.normFold {
		if n := e.g.Nodes[id]; e.normQuant[id] == "q8_k" {
			words[tailNormK] = max(words[tailNormK], n.Type.Shape.Inner().N/256)
		} else {
			words[tailNorm] = max(words[tailNorm], n.Type.Shape.Inner().N/32)
		}
	}
	return words
}

// The tails buffer's regions, one per kind of counter: each counts
// modulo its own number of workgroups.
const (
	tailGateUp    = iota // gate·up, Q8_0/Q8_1 blocks of 32 rows
	tailGateUpK          // gate·up, Q8_K super-blocks of 256 rows
	tailAttention        // attention, Q8_K super-blocks of 256/hd heads
	tailNorm             // a folded norm's producer, Q8_0 blocks of 32 rows (counting rows)
	tailNormK            // a folded norm's producer, Q8_K super-blocks of 256 rows (counting rows)
	tailKinds
)

// ropeKV names the RoPE nodes an Attention's KV store dispatch runs
// (rope_kv.comp): the keys' always, the queries' when q >= 0.
type ropeKV struct{ q, k int }

// fuseRoPEKV finds the Attention nodes whose keys are a RoPE that nothing
// else reads, rotating by the Attention's own positions, and lets their
// KV store dispatch rotate the keys as it stores them (rope_kv), and the
// queries as well when they are such a RoPE with the same rotation: a
// decode step saves two dispatches and two barriers a layer. The fused
// RoPE nodes are deferred: recorded by their Attention, not in order.
func (e *Executable) fuseRoPEKV() {
	g := e.g
	users := g.Users()
	outputs := map[int]bool{}
	for _, id := range g.Outputs {
		outputs[id] = true
	}
	here := func(id int) bool {
		v := &e.vals[id]
		return v.active && !v.import_ && (e.exported == nil || !e.exported[id]) && !outputs[id]
	}
	// fusable: r is a RoPE of heads heads of att's head size, read only
	// by att, at att's positions, from the arena.
	fusable := func(r *graph.Node, att *graph.Node, heads int) bool {
		hd := att.Attrs.Int("head_dim")
		return r.Op == ops.RoPE && here(r.ID) && slices.Equal(users[r.ID], []int{att.ID}) &&
			r.Inputs[1] == att.Inputs[3] && r.Attrs.Int("heads") == heads && r.Attrs.Int("head_dim") == hd &&
			hd%2 == 0 && e.vals[r.Inputs[0]].kind == kindArena
	}
	e.ropeKV, e.deferred = map[int]ropeKV{}, map[int]bool{}
	if testNoFusion {
		return
	}
	for _, id := range e.order {
		n := g.Nodes[id]
		if n.Op != ops.Attention || !here(id) || e.vals[n.Inputs[2]].kind != kindArena {
			continue
		}
		rk := g.Nodes[n.Inputs[1]]
		if !fusable(rk, n, n.Attrs.Int("kv_heads")) {
			continue
		}
		f := ropeKV{q: -1, k: rk.ID}
		if rq := g.Nodes[n.Inputs[0]]; fusable(rq, n, n.Attrs.Int("heads")) &&
			e.vals[rq.ID].rope == e.vals[rk.ID].rope && rq.Attrs.Bool("neox") == rk.Attrs.Bool("neox") {
			f.q = rq.ID
			e.deferred[rq.ID] = true
		}
		e.deferred[rk.ID] = true
		e.ropeKV[id] = f
	}
}

// qkvPack is one buffer holding a MatMulQKV's three weights (one type,
// one width), so that matvec_qkv computes all three projections in one
// dispatch: part i's rows start at row start[i] of the buffer, each part
// on a row whose byte offset suits minStorageBufferOffsetAlignment (the
// other dispatches bind each part at its offset), with at most a few rows
// of padding between the parts.
type qkvPack struct {
	buf      *Buffer
	start    [3]int // first row of each part
	rows     [3]int
	rowBytes int64
}

// qkvPart is weight i of a qkvPack.
type qkvPart struct {
	p *qkvPack
	i int
}

// packQKV plans a qkvPack for every MatMulQKV whose weights are of one
// type and width and fit one buffer together, and no weight serves
// another pack.
func (e *Executable) packQKV(w backends.Weights) {
	e.packs, e.packOf = map[int]*qkvPack{}, map[int]qkvPart{}
	if testNoFusion {
		return
	}
	align := max(int64(e.d.props.Limits.MinStorageBufferOffsetAlignment), 4)
	for _, id := range e.order {
		n := e.g.Nodes[id]
		ws := ops.MatMulWeights(n)
		if n.Op != ops.MatMulQKV || len(ws) != 3 || e.placed && backends.Foreign(n, name) {
			continue
		}
		p := &qkvPack{}
		ok := true
		var next int64
		for i, wid := range ws {
			wt := e.g.Nodes[wid]
			t, found := w.Tensor(wt.Tensor)
			first := e.g.Nodes[ws[0]].Type
			_, taken := e.packOf[wid]
			if !found || taken || len(wt.Type.Shape) != 2 || wt.Type.DType != first.DType || wt.Type.Shape[1].N != first.Shape[1].N {
				ok = false
				break
			}
			rows := wt.Type.Shape[0].N
			size := int64(len(w.TensorData(t)))
			if size%rows != 0 || (p.rowBytes != 0 && size/rows != p.rowBytes) {
				ok = false
				break
			}
			p.rowBytes = size / rows
			for next*p.rowBytes%align != 0 {
				next++
			}
			p.start[i], p.rows[i] = int(next), int(rows)
			next += rows
		}
		if !ok || (next*p.rowBytes+3)&^3 > e.weightLimit() {
			continue
		}
		e.packs[id] = p
		for i, wid := range ws {
			e.packOf[wid] = qkvPart{p, i}
		}
	}
}

// uploadPacked copies a weight into its place in a qkvPack's buffer,
// allocating the buffer for the first of the three.
func (e *Executable) uploadPacked(v *value, at qkvPart, data []byte) error {
	n, p, part := v.n, at.p, at.i
	if p.buf == nil {
		end := int64(p.start[2]+p.rows[2]) * p.rowBytes
		b, err := e.d.Alloc((end + 3) &^ 3)
		if err != nil {
			return fmt.Errorf("weight %q: %w", n.Tensor, err)
		}
		e.weights = append(e.weights, b)
		p.buf = b
	}
	v.kind, v.chunkRows, v.w, v.wOff = kindWeight, p.rows[part], []*Buffer{p.buf}, int64(p.start[part])*p.rowBytes
	chunk := data
	if len(chunk)%4 != 0 {
		chunk = append(slices.Clip(chunk), make([]byte, 4-len(chunk)%4)...)
	}
	if err := e.d.Upload(p.buf, v.wOff, chunk); err != nil {
		return fmt.Errorf("weight %q: %w", n.Tensor, err)
	}
	if e.uploaded += int64(len(chunk)); e.progress != nil {
		e.progress(e.uploaded, e.weightBytes)
	}
	return e.uploadGrid(n.Type.DType)
}
