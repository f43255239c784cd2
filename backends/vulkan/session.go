//go:build linux && (amd64 || arm64)

package vulkan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"unsafe"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/shaders"
)

// Session is one session's device memory (backends.State): the
// activation arena, the KV cache of every attention layer, the RoPE
// tables, the step buffer the host writes the batch into and the
// read-back buffer of the logits. Each step shape (tokens, rows) is
// recorded once into one command buffer and re-submitted; only the step
// buffer changes between submissions.
type Session struct {
	e      *Executable
	ctx    int // KV cells of each sequence
	seqs   int // sequences, each with ctx cells in every layer's cache
	kvType backends.KVType
	flash  bool               // flash attention (flash_attn.comp), llama.cpp's -fa
	segs   []backends.Segment // the running batch's sequences (check)

	arena, scratch, step, out, table *Buffer
	// tails holds the counters of the dispatches whose last workgroups
	// quantize their readers' activations (tailCounters), region k from
	// byte tailOff[k]; zero when the session starts; nil without such
	// nodes.
	tails    *Buffer
	tailOff  [tailKinds]int64
	kc, vc   []*Buffer
	tableOff []int64 // per RoPE parameter set

	steps map[stepKey]*Program
	order []stepKey // recording order, oldest first
	res   []float32
	// exports holds, per node, the host copy of a value that another
	// backend's split reads (LoadOptions.Placed).
	exports map[int][]float32
	// prof, after StartProfile or when WEFT_VULKAN_PROFILE=1, sums every
	// node's device time; with the variable it is printed on stderr when
	// the session closes.
	prof *Profiler
}

// ProfileEnv turns on the GPU profile of every Session (=1).
const ProfileEnv = "WEFT_VULKAN_PROFILE"

// stepKey is a recorded step shape: a split (-1: the whole graph), its
// tokens and its output rows.
type stepKey struct{ split, tokens, rows int }

// maxRecorded bounds the recorded step shapes a Session keeps; decode is
// one shape, prefill batches add one each.
const maxRecorded = 8

// NewState allocates one session's memory (backends.Program).
func (e *Executable) NewState(o backends.StateOptions) (backends.State, error) {
	return e.NewSession(o)
}

// NewSession is NewState with the concrete type.
func (e *Executable) NewSession(o backends.StateOptions) (s *Session, err error) {
	if o.Ctx <= 0 {
		return nil, fmt.Errorf("context size %d must be positive", o.Ctx)
	}
	if err := backends.CheckKV(o.KVType, o.FlashAttn); err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	if err := backends.CheckFlashAcc(o); err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	if o.FlashF32Acc && !o.KVType.Quantized() {
		// A quantized V accumulates in float32 already (llama.cpp's rule).
		return nil, fmt.Errorf("vulkan: --flash-acc f32 is the CPU backend's: the Vulkan shaders keep llama.cpp's binary16 accumulator with an f16 KV cache; leave out --flash-acc or use --backend cpu")
	}
	if o.KVType.Quantized() {
		for _, id := range e.attention {
			if hd := e.g.Nodes[id].Attrs.Int("head_dim"); hd%32 != 0 {
				return nil, fmt.Errorf("vulkan: a %s KV cache stores blocks of 32 values, and this model's attention heads have %d: use --kv-type f16 (llama.cpp refuses it too)", o.KVType, hd)
			}
		}
	}
	seqs := o.NumSeqs()
	if int64(o.Ctx)*int64(seqs) > math.MaxInt32 {
		return nil, fmt.Errorf("vulkan: %d sequences of %d positions are too many KV cells", seqs, o.Ctx)
	}
	s = &Session{e: e, ctx: o.Ctx, seqs: seqs, kvType: o.KVType, flash: o.FlashAttn, steps: map[stepKey]*Program{}, exports: map[int][]float32{}}
	if os.Getenv(ProfileEnv) == "1" {
		s.prof = &Profiler{print: true}
	}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	d := e.d
	if err := e.checkSessionMemory(o.Ctx*seqs, o.KVType); err != nil {
		return s, err
	}
	limit := int64(d.info.MaxStorageBufferRange)
	if 4*e.arenaElems > limit {
		return s, fmt.Errorf("vulkan: the activation arena (%d MiB for %d tokens) exceeds %s's storage-buffer range of %d MiB: use a smaller batch",
			4*e.arenaElems>>20, e.maxTokens, d.info.Name, limit>>20)
	}
	if s.arena, err = d.Alloc(4 * e.arenaElems); err != nil {
		return s, err
	}
	if s.scratch, err = d.Alloc(max(4*e.q8Words, 4)); err != nil {
		return s, err
	}
	if words := e.tailCounters(); words != [tailKinds]int64{} {
		align := max(int64(d.props.Limits.MinStorageBufferOffsetAlignment), 4)
		var size int64
		for k, n := range words {
			s.tailOff[k] = size
			size += (4*n + align - 1) / align * align
		}
		if s.tails, err = d.Alloc(size); err != nil {
			return s, err
		}
		if err = d.Upload(s.tails, 0, make([]byte, size)); err != nil {
			return s, err
		}
	}
	if s.step, err = d.AllocMapped(4*e.stepWords(), false); err != nil {
		return s, err
	}
	outN := maxElems(e.g.Nodes[e.logits].Type, e.maxTokens)
	if s.out, err = d.AllocMapped(4*outN, true); err != nil {
		return s, err
	}
	s.res = make([]float32, outN)
	for _, id := range e.attention {
		a := e.g.Nodes[id].Attrs
		size := int64(o.Ctx) * int64(seqs) * kvRowBytes(o.KVType, a.Int("kv_heads")*a.Int("head_dim"))
		if size > limit {
			return s, fmt.Errorf("vulkan: a KV cache of %d positions × %d sequences (%d MiB per layer) exceeds %s's storage-buffer range of %d MiB",
				o.Ctx, seqs, size>>20, d.info.Name, limit>>20)
		}
		k, err := d.Alloc(size)
		if err != nil {
			return s, err
		}
		s.kc = append(s.kc, k)
		v, err := d.Alloc(size)
		if err != nil {
			return s, err
		}
		s.vc = append(s.vc, v)
	}
	return s, s.uploadRoPETables()
}

// uploadRoPETables computes each RoPE parameter set's cos and sin for
// every position of the context exactly as ref.RoPE.Apply does.
func (s *Session) uploadRoPETables() error {
	var all []float32
	for _, r := range s.e.ropes {
		s.tableOff = append(s.tableOff, int64(len(all)))
		all = append(all, RoPETable(r.RoPE, s.ctx)...)
	}
	if len(all) == 0 {
		all = []float32{0}
	}
	if int64(4*len(all)) > int64(s.e.d.info.MaxStorageBufferRange) {
		return fmt.Errorf("vulkan: RoPE tables for %d positions exceed the storage-buffer range", s.ctx)
	}
	var err error
	if s.table, err = s.e.d.Alloc(int64(4 * len(all))); err != nil {
		return err
	}
	return s.e.d.UploadF32(s.table, 0, all)
}

// RoPETable returns the cos and sin of every rotation angle of positions
// 0..positions-1 for rope.comp, computed exactly as r.Apply computes them
// (ref.RoPE.CosSin): entry (pos, i) at 2·(pos·r.Dims/2 + i).
func RoPETable(r ref.RoPE, positions int) []float32 {
	out := make([]float32, r.Dims*positions)
	for pos := 0; pos < positions; pos++ {
		r.CosSin(int32(pos), out[pos*r.Dims:(pos+1)*r.Dims])
	}
	return out
}

// Context is the KV cache size in positions.
func (s *Session) Context() int { return s.ctx }

// KVBytes is the device memory of the KV cache.
func (s *Session) KVBytes() int64 {
	var n int64
	for i := range s.kc {
		n += s.kc[i].Size() + s.vc[i].Size()
	}
	return n
}

// CopySeq makes the first n KV cells of sequence dst a copy of sequence
// src's in every layer (backends.SeqCopier), on the device.
func (s *Session) CopySeq(dst, src, n int) error {
	if s.e == nil {
		return errors.New("vulkan: CopySeq on a closed session")
	}
	if err := backends.CheckCopy(dst, src, n, s.seqs, s.ctx); err != nil {
		return err
	}
	if dst == src || n == 0 {
		return nil
	}
	for i, id := range s.e.attention {
		a := s.e.g.Nodes[id].Attrs
		row := kvRowBytes(s.kvType, a.Int("kv_heads")*a.Int("head_dim"))
		for _, b := range []*Buffer{s.kc[i], s.vc[i]} {
			if err := s.e.d.CopyWithin(b, int64(dst*s.ctx)*row, int64(src*s.ctx)*row, int64(n)*row); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close releases the session's memory; it must not be running.
func (s *Session) Close() error {
	if s == nil || s.e == nil {
		return nil
	}
	var err error
	if s.e.d != nil {
		err = s.e.d.dev.WaitIdle()
	}
	for _, p := range s.steps {
		p.Close()
	}
	if s.prof != nil && s.prof.print {
		s.prof.Write(os.Stderr)
	}
	for _, b := range append(append([]*Buffer{s.arena, s.scratch, s.step, s.out, s.table, s.tails}, s.kc...), s.vc...) {
		b.Free()
	}
	s.steps, s.e = nil, nil
	return err
}

// Run evaluates a batch and returns the logits of the rows asked for,
// [len(Rows)][vocab]; the slice is the Session's until the next Run.
func (s *Session) Run(b backends.Batch) ([]float32, error) {
	if s.e != nil && s.e.placed {
		return nil, errors.New("vulkan: this program runs part of a graph: run it one split at a time (RunSplit)")
	}
	if err := s.begin(b); err != nil {
		return nil, err
	}
	if err := s.submit(stepKey{-1, len(b.Tokens), len(b.Rows)}); err != nil {
		return nil, err
	}
	return s.logits(len(b.Rows)), nil
}

// RunSplit evaluates split i of a graph loaded with LoadOptions.Placed
// (backends.SplitState): values other backends computed are uploaded from
// x into the arena first, and the values other backends read are
// downloaded into x after. It returns the logits when the split computes
// them, else nil.
func (s *Session) RunSplit(i int, b backends.Batch, x *backends.Exchange) ([]float32, error) {
	if err := s.begin(b); err != nil {
		return nil, err
	}
	e := s.e
	if !e.placed || i < 0 || i >= len(e.g.Splits) || e.g.Splits[i].Backend != name {
		return nil, fmt.Errorf("vulkan: split %d is not one of this program's splits", i)
	}
	nodes := e.g.Splits[i].Nodes
	r := &recorder{s: s, T: len(b.Tokens), R: len(b.Rows)}
	for _, id := range nodes {
		if v := &e.vals[id]; v.import_ {
			src, err := x.Get(v.n.Inputs[0], r.rows(v)*v.width)
			if err != nil {
				return nil, err
			}
			if err := e.d.UploadF32(s.arena, v.off, src); err != nil {
				return nil, err
			}
		}
	}
	if err := s.submit(stepKey{i, r.T, r.R}); err != nil {
		return nil, err
	}
	var logits []float32
	for _, id := range nodes {
		v := &e.vals[id]
		switch {
		case id == e.logits:
			logits = s.logits(r.R)
			if e.exported[id] {
				x.Put(id, logits)
			}
		case e.exported[id]:
			buf := s.exports[id]
			if buf == nil {
				buf = make([]float32, maxElems(v.n.Type, e.maxTokens))
				s.exports[id] = buf
			}
			buf = buf[:r.rows(v)*v.width]
			if err := e.d.DownloadF32(buf, s.arena, v.off); err != nil {
				return nil, err
			}
			x.Put(id, buf)
		}
	}
	return logits, nil
}

// begin checks a batch and writes it into the step buffer.
func (s *Session) begin(b backends.Batch) error {
	if s.e == nil {
		return errors.New("vulkan: Run on a closed session")
	}
	if err := s.check(b); err != nil {
		return err
	}
	e := s.e
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&s.step.Mapped()[0])), e.stepWords())
	m := e.maxTokens
	cells := e.cellWords()
	for i, t := range b.Tokens {
		words[i] = uint32(t)
		words[m+i] = uint32(b.Positions[i])
		words[cells+i] = uint32(b.SeqOf(i) * s.ctx)
	}
	for i, r := range b.Rows {
		words[2*m+i] = uint32(r)
	}
	return nil
}

// submit runs the command buffer of step shape key, recording it first
// if it is new (keeping the maxRecorded newest), and waits for it.
func (s *Session) submit(key stepKey) error {
	p, ok := s.steps[key]
	if !ok {
		var err error
		if p, err = s.record(key); err != nil {
			return err
		}
		if len(s.order) >= maxRecorded {
			old := s.order[0]
			s.order = s.order[1:]
			s.steps[old].Close()
			delete(s.steps, old)
		}
		s.steps[key] = p
		s.order = append(s.order, key)
	}
	if err := p.Run(); err != nil {
		return err
	}
	if s.prof != nil {
		return s.prof.Add(key.tokens, p, 1)
	}
	return nil
}

// logits reads the logits of R rows back from the read-back buffer in one
// copy: the device's little-endian float32s are the host's (the binding
// builds for amd64 and arm64 only; begin writes its words the same way).
// A decode token's 128 KB took 39 µs converted value by value, 3 µs so.
func (s *Session) logits(R int) []float32 {
	n := R * s.e.vals[s.e.logits].width
	mapped := s.out.Mapped()[:4*n]
	copy(s.res[:n], unsafe.Slice((*float32)(unsafe.Pointer(&mapped[0])), n))
	return s.res[:n]
}

// check validates a batch as the CPU backend does.
func (s *Session) check(b backends.Batch) error {
	segs, err := backends.CheckBatch(b, s.seqs, s.ctx, s.e.maxTokens, s.segs)
	if err != nil {
		return err
	}
	s.segs = segs
	for _, id := range s.e.order {
		if nd := s.e.g.Nodes[id]; nd.Op == ops.GetRows {
			vocab := s.e.g.Nodes[nd.Inputs[0]].Type.Shape[0].N
			for i, t := range b.Tokens {
				if t < 0 || int64(t) >= vocab {
					return fmt.Errorf("token id %d at batch index %d is outside the vocabulary of %d", t, i, vocab)
				}
			}
		}
	}
	return nil
}

// recorder records one step shape.
type recorder struct {
	s    *Session
	p    *Program
	T, R int
	// scratch is the node whose activations the scratch buffer holds
	// (quantized or rounded for its matmuls), or -1; from word scratchOff.
	// scratchPairs: binary16-rounded as pairs (round_f16x2's layout, for
	// the F16 tensor-core tiles), not as float32 values.
	scratch      int
	scratchOff   uint32
	scratchPairs bool
	// pendingNorm is the folded RMSNormMul (foldNorms) whose blocks the
	// dispatch just recorded wrote from scratch word pendingOff (normOut),
	// or -1; normIn is the one whose blocks the scratch holds for its
	// reader (NORM_IN), or -1.
	pendingNorm, normIn int
	pendingOff          uint32
}

// record records every dispatch of a step shape (the whole graph, or one
// split) into one command buffer, with a barrier after each node.
func (s *Session) record(key stepKey) (*Program, error) {
	p, err := s.e.d.NewProgram()
	if err != nil {
		return nil, err
	}
	if s.prof != nil {
		if err := p.Profile(); err != nil {
			p.Close()
			return nil, err
		}
	}
	r := &recorder{s: s, p: p, T: key.tokens, R: key.rows, scratch: -1, pendingNorm: -1, normIn: -1}
	nodes := s.e.order
	if key.split >= 0 {
		nodes = s.e.g.Splits[key.split].Nodes
	}
	for _, id := range nodes {
		v := &s.e.vals[id]
		if !v.active || v.import_ || s.e.deferred[id] {
			continue // deferred: its Attention's dispatch computes it
		}
		if id == r.pendingNorm {
			// A folded norm: the dispatch before wrote its blocks, its
			// reader (next) scales them (foldNorms).
			r.scratch, r.scratchOff, r.scratchPairs, r.normIn, r.pendingNorm = id, r.pendingOff, false, id, -1
			continue
		}
		r.pendingNorm = -1
		if err := r.node(v); err != nil {
			p.Close()
			return nil, fmt.Errorf("node %d (%s %q): %w", id, v.n.Op, v.n.Name, err)
		}
		p.StampNode(id, profileLabel(v, func(id int) *value { return &s.e.vals[id] }))
		p.Barrier()
	}
	if err := p.End(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// rows is the number of rows value v has in this step.
func (r *recorder) rows(v *value) int {
	sh := v.n.Type.Shape
	if len(sh) < 2 {
		return 1
	}
	switch sh[0].Sym {
	case "T":
		return r.T
	case "R":
		return r.R
	}
	return int(sh[0].N)
}

// operand is where value id lives: its buffer and element (or word)
// offset.
func (r *recorder) operand(id int) (Range, uint32) {
	s, v := r.s, &r.s.e.vals[id]
	switch v.kind {
	case kindInput:
		return Whole(s.step), uint32(v.off)
	case kindWeight:
		return weightRange(v, 0), 0 // a vector (a matrix's chunks are the matmul's and GetRows's)
	case kindLogits:
		return Whole(s.out), 0
	}
	return Whole(s.arena), uint32(v.off)
}

func (r *recorder) in(v *value, i int) *value { return &r.s.e.vals[v.n.Inputs[i]] }

// dispatch records kernel name with push constants built from words.
func (r *recorder) dispatch(name string, groups [3]uint32, push []uint32, bufs ...Range) error {
	k, err := r.s.e.kernel(name)
	if err != nil {
		return err
	}
	b := make([]byte, 4*len(push))
	for i, w := range push {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return r.p.Dispatch(k, groups, b, bufs...)
}

func f32bits(f float32) uint32 { return math.Float32bits(f) }

// strided is a dispatch of about one invocation per element for a
// grid-stride kernel of workgroup wg.
func strided(n, wg int) [3]uint32 {
	return [3]uint32{uint32(min(max((n+wg-1)/wg, 1), 4096)), 1, 1}
}

func (r *recorder) node(v *value) error {
	n := v.n
	a := n.Attrs
	rows := r.rows(v)
	dst, doff := r.operand(n.ID)
	d := r.s.e.d
	rowGroups := func(rows int) [3]uint32 {
		x, y := d.RowGroups(uint32(rows))
		return [3]uint32{x, y, 1}
	}
	switch n.Op {
	case ops.GetRows, ops.SelectRows:
		_, idsoff := r.operand(n.Inputs[1])
		// get_rows.comp: a workgroup per row and 64 columns (z).
		groups := rowGroups(rows)
		groups[2] = uint32(min((v.width+63)/64, 64))
		if t := r.in(v, 0); t.kind == kindWeight {
			// One dispatch per row chunk of the table; each writes the
			// output rows whose ids it holds.
			for c := range t.w {
				push := []uint32{uint32(v.width), uint32(rows), idsoff, 0, doff, uint32(c * t.chunkRows), uint32(t.chunkRows)}
				if err := r.dispatch("get_rows_"+weightKernel[t.n.Type.DType], groups, push, r.s.e.withGrid(t.n.Type.DType, weightRange(t, c), Whole(r.s.step), dst)...); err != nil {
					return err
				}
			}
			return nil
		}
		table, toff := r.operand(n.Inputs[0])
		return r.dispatch("get_rows_f32", groups, []uint32{uint32(v.width), uint32(rows), idsoff, toff, doff, 0, math.MaxUint32},
			table, Whole(r.s.step), dst)
	case ops.RMSNorm, ops.RMSNormMul:
		x, xoff := r.operand(n.Inputs[0])
		// A grouped norm (per-head) is a norm over rows of the group width.
		group := ops.NormGroup(a, v.width)
		ntok := rows
		rows = rows * v.width / group
		push := []uint32{uint32(group), uint32(rows), f32bits(a.Float("eps")), xoff, doff, 0}
		if n.Op == ops.RMSNorm {
			return r.dispatch("rms_norm_f32", rowGroups(rows), append(push, 0), x, dst)
		}
		w, woff := r.operand(n.Inputs[1])
		push[5] = woff
		kernel, bufs := "rms_norm_mul_f32", []Range{x, dst, w}
		if kind := r.s.e.normQuant[n.ID]; kind != "" {
			// Its matmuls' activations too (fusedNormQuant), as binary16
			// pairs where they all take binary16 tensor-core tiles (F16
			// weights, or weights decoded to binary16: coopPairs), whole
			// rows (the pairs are laid out per token).
			r.scratch, r.scratchOff, r.scratchPairs = n.ID, 0, false
			if group == v.width && r.s.e.readersTakePairs(n.ID, ntok) {
				kind, r.scratchPairs = "f16x2", true
			}
			kernel, bufs = "rms_norm_mul_"+kind, append(bufs, Whole(r.s.scratch))
		}
		groups := rowGroups(rows)
		if rows == 1 && (x.Buf != dst.Buf || max(xoff, doff)-min(xoff, doff) >= uint32(group)) {
			// A decode step's one row: split into parts of a workgroup's
			// width, a workgroup each (rms_norm.comp), unless d is x.
			k, err := r.s.e.kernel(kernel)
			if err != nil {
				return err
			}
			wg := int(k.Workgroup())
			groups[2] = uint32((group + wg - 1) / wg)
		}
		return r.dispatch(kernel, groups, append(push, 0), bufs...)
	case ops.Softmax:
		x, xoff := r.operand(n.Inputs[0])
		return r.dispatch("softmax_f32", rowGroups(rows), []uint32{uint32(v.width), uint32(rows), f32bits(a.Float("scale")), xoff, doff}, x, dst)
	case ops.Add, ops.Mul:
		x, xoff := r.operand(n.Inputs[0])
		y, yoff := r.operand(n.Inputs[1])
		total := rows * v.width
		nb := r.rows(r.in(v, 1)) * r.in(v, 1).width
		name := map[string]string{ops.Add: "add_f32", ops.Mul: "mul_f32"}[n.Op]
		return r.dispatch(name, strided(total, 256), []uint32{uint32(total), uint32(nb), xoff, yoff, doff}, x, y, dst)
	case ops.SiLU, ops.Copy:
		x, xoff := r.operand(n.Inputs[0])
		total := rows * v.width
		return r.dispatch(map[string]string{ops.SiLU: "silu_f32", ops.Copy: "copy_f32"}[n.Op], strided(total, 256), []uint32{uint32(total), xoff, doff, 0}, x, dst)
	case ops.SwiGLU:
		x, xoff := r.operand(n.Inputs[0])
		u, uoff := r.operand(n.Inputs[1])
		total := rows * v.width
		return r.dispatch("swiglu_f32", strided(total, 256), []uint32{uint32(total), xoff, doff, uoff}, x, u, dst)
	case ops.RoPE:
		x, xoff := r.operand(n.Inputs[0])
		_, posoff := r.operand(n.Inputs[1])
		rp := r.s.e.ropes[v.rope]
		total := rows * v.width
		return r.dispatch("rope_f32", strided(total, 64), []uint32{uint32(a.Int("heads")), uint32(a.Int("head_dim")), uint32(rp.Dims / 2),
			boolWord(a.Bool("neox")), uint32(rows), xoff, doff, posoff, uint32(r.s.tableOff[v.rope])},
			x, Whole(r.s.table), Whole(r.s.step), dst)
	case ops.Attention:
		return r.attention(v, dst, doff)
	case ops.MatMul, ops.MatMulAdd, ops.MatMulQKV, ops.MatMulGateUpSwiGLU:
		return r.matmul(v, dst, doff)
	case ops.GELU:
		x, xoff := r.operand(n.Inputs[0])
		total := rows * v.width
		return r.dispatch("gelu_f32", strided(total, 256), []uint32{uint32(total), xoff, doff, 0}, x, dst)
	case ops.Scale:
		x, xoff := r.operand(n.Inputs[0])
		total := rows * v.width
		return r.dispatch("scale_f32", strided(total, 256), []uint32{uint32(total), xoff, doff, f32bits(a.Float("scale"))}, x, dst)
	case ops.SoftCap:
		x, xoff := r.operand(n.Inputs[0])
		total := rows * v.width
		return r.dispatch("softcap_f32", strided(total, 256), []uint32{uint32(total), xoff, doff, f32bits(a.Float("cap")), f32bits(capInv(a.Float("cap")))}, x, dst)
	case ops.LayerNorm, ops.LayerNormMul, ops.LayerNormMulAdd:
		x, xoff := r.operand(n.Inputs[0])
		push := []uint32{uint32(v.width), uint32(rows), f32bits(a.Float("eps")), xoff, doff, 0, 0}
		bufs := []Range{x, dst}
		for i := 1; i < len(n.Inputs); i++ { // the weight, then the bias
			b, off := r.operand(n.Inputs[i])
			push[4+i] = off
			bufs = append(bufs, b)
		}
		kernel := map[string]string{ops.LayerNorm: "layer_norm_f32", ops.LayerNormMul: "layer_norm_mul_f32", ops.LayerNormMulAdd: "layer_norm_mul_add_f32"}[n.Op]
		return r.dispatch(kernel, rowGroups(rows), push, bufs...)
	case ops.MatMulBias, ops.MatMulGateUpGeGLU:
		return r.matmul(v, dst, doff)
	}
	if c, ok := ops.LookupCustom(n.Op); ok {
		return r.custom(c, v, dst, doff)
	}
	return fmt.Errorf("no Vulkan shader for %s", n.Op)
}

func boolWord(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func (r *recorder) attention(v *value, dst Range, doff uint32) error {
	a := v.n.Attrs
	heads, kvHeads, hd := a.Int("heads"), a.Int("kv_heads"), a.Int("head_dim")
	q, qoff := r.operand(v.n.Inputs[0])
	k, koff := r.operand(v.n.Inputs[1])
	vv, voff := r.operand(v.n.Inputs[2])
	_, posoff := r.operand(v.n.Inputs[3])
	if r.in(v, 1).width != kvHeads*hd || r.in(v, 2).width != kvHeads*hd {
		return fmt.Errorf("K and V rows of %d and %d values for %d KV heads of %d", r.in(v, 1).width, r.in(v, 2).width, kvHeads, hd)
	}
	kvt := r.s.kvType.String() // f16, f32, q8_0, q4_0: the store and attention shaders' suffix
	kc, vc := Whole(r.s.kc[v.kv]), Whole(r.s.vc[v.kv])
	width := kvHeads * hd
	stores := r.T * width / 2 // kv_store's invocations: a pair of values each
	if r.s.kvType.Quantized() {
		stores = r.T * ((width + 63) / 64) // 64 values (two blocks) each
	}
	celloff := uint32(r.s.e.cellWords())
	f, fused := r.s.e.ropeKV[v.n.ID]
	if inAttention := r.ropeInAttention(v, f, fused); inAttention != nil {
		return inAttention()
	}
	if fused {
		if err := r.ropeKV(v, f, kvt); err != nil {
			return err
		}
		r.p.Stamp("RoPE+KVStore")
	} else {
		if err := r.dispatch("kv_store_"+kvt, strided(stores, 64), []uint32{uint32(width), uint32(r.T), koff, voff, posoff, celloff},
			k, vv, Whole(r.s.step), kc, vc); err != nil {
			return err
		}
		r.p.Stamp("KVStore")
	}
	r.p.Barrier()
	scale, shader := a.Float("scale"), "attention_"+kvt
	if r.s.flash {
		// flash_attn.comp scales before soft-capping, by scale/softcap
		// computed in float32 on the host, as ggml does.
		shader = "flash_" + kvt
		if c := a.Float("softcap"); c > 0 {
			scale /= c
		}
	}
	groups := [3]uint32{uint32(heads), uint32(r.T), 1}
	if !r.s.flash && r.T >= attentionTileTokens && hd <= attentionTileHeadDim && hd%4 == 0 {
		// A prefill: tiles of tokens share the cache's rows.
		shader = "attention_tiled_" + kvt
		groups[1] = uint32((r.T + attentionTileTokens - 1) / attentionTileTokens)
		if r.s.e.d.coopAttention(r.s.kvType, hd) {
			// On tensor cores, 64 tokens a workgroup (smaller staged
			// rows for heads of up to 64 values).
			shader = "attention_coop_" + kvt
			if hd <= attentionCoopSmallHeadDim {
				shader = "attention_coop_hd64_" + kvt
			}
			groups[1] = uint32((r.T + attentionCoopTokens - 1) / attentionCoopTokens)
			if k, ok := r.s.e.d.cm2Attention(r.s.kvType, hd); ok {
				// On cooperative matrix 2: AT_TQ tokens a workgroup.
				tq, _ := k.DefineInt("AT_TQ")
				shader, groups[1] = k.Name, uint32((r.T+tq-1)/tq)
			}
		}
	}
	push := []uint32{uint32(heads), uint32(kvHeads), uint32(hd), uint32(r.T), qoff, doff, posoff, f32bits(scale), 0, celloff, uint32(a.Int("window")), f32bits(a.Float("softcap")), f32bits(capInv(a.Float("softcap")))}
	if kind := r.s.e.normQuant[v.n.ID]; kind != "" && kind != "q8_k" { // Q8_K: only a decode step's (ropeInAttention)
		// The output projection's activations too (fusedNormQuant).
		r.scratch, r.scratchOff, r.scratchPairs = v.n.ID, 0, false
		return r.dispatch(shader+"_"+kind, groups, push, q, Whole(r.s.step), kc, vc, dst, Whole(r.s.scratch))
	}
	return r.dispatch(shader, groups, push, q, Whole(r.s.step), kc, vc, dst)
}

// attentionTileTokens and attentionTileHeadDim are attention_tiled.comp's
// tile of tokens (TQ) and largest head (HDMAX; heads a multiple of 4).
// Batches of at least one tile take it; smaller ones (decode steps) take
// attention.comp, whose workgroup per token and head keeps more of the
// GPU busy.
const (
	attentionTileTokens  = 16
	attentionTileHeadDim = 128
)

// attentionCoopTokens is attention_coop.comp's tile of tokens (TQ);
// attentionCoopSmallHeadDim the largest head of its _hd64 variants.
const (
	attentionCoopTokens       = 64
	attentionCoopSmallHeadDim = 64
)

// ropeInAttention returns the recording of Attention v as one dispatch
// that also does its RoPE·KV store f (attention.comp's ROPE_KV variants),
// or nil where that does not apply: a decode step of one token whose
// queries and keys both rotate there, into a float cache, without flash
// attention. A decode step saves a dispatch and a barrier a layer.
func (r *recorder) ropeInAttention(v *value, f ropeKV, fused bool) func() error {
	a := v.n.Attrs
	hd := a.Int("head_dim")
	if !fused || f.q < 0 || r.T != 1 || r.s.flash || r.s.kvType.Quantized() || hd > 256 {
		return nil
	}
	return func() error {
		rk, rq := r.s.e.vals[f.k], r.s.e.vals[f.q]
		rp := r.s.e.ropes[rk.rope]
		_, qoff := r.operand(rq.n.Inputs[0])
		_, koff := r.operand(rk.n.Inputs[0])
		_, voff := r.operand(v.n.Inputs[2])
		_, posoff := r.operand(v.n.Inputs[3])
		dst, doff := r.operand(v.n.ID)
		push := []uint32{uint32(a.Int("heads")), uint32(a.Int("kv_heads")), uint32(hd), 1, qoff, doff, posoff,
			f32bits(a.Float("scale")), 0, uint32(r.s.e.cellWords()), uint32(a.Int("window")),
			f32bits(a.Float("softcap")), f32bits(capInv(a.Float("softcap"))),
			koff, voff, uint32(r.s.tableOff[rk.rope]), uint32(rp.Dims / 2), boolWord(rk.n.Attrs.Bool("neox"))}
		shader := "attention_rkv_" + r.s.kvType.String()
		bufs := []Range{Whole(r.s.arena), Whole(r.s.step), Whole(r.s.kc[v.kv]), Whole(r.s.vc[v.kv]), dst}
		kind := r.s.e.normQuant[v.n.ID]
		if kind != "" {
			// The output projection's activations too (fusedNormQuant;
			// Q8_K by a super-block's last workgroup, counted in tails).
			r.scratch, r.scratchOff, r.scratchPairs = v.n.ID, 0, false
			shader += "_" + kind
			bufs = append(bufs, Whole(r.s.scratch))
		}
		bufs = append(bufs, Whole(r.s.table))
		if kind == "q8_k" {
			bufs = append(bufs, Range{Buf: r.s.tails, Offset: r.s.tailOff[tailAttention]})
		}
		groups := [3]uint32{uint32(a.Int("heads")), 1, 1}
		return r.dispatch(shader, groups, push, bufs...)
	}
}

// ropeKV records Attention v's RoPE·KV store (rope_kv.comp, fuseRoPEKV):
// the keys' RoPE into the cache with the values, and the queries' RoPE
// into its own value when f.q >= 0. Every source is in the arena.
func (r *recorder) ropeKV(v *value, f ropeKV, kvt string) error {
	a := v.n.Attrs
	rk := r.s.e.vals[f.k]
	rp := r.s.e.ropes[rk.rope]
	_, koff := r.operand(rk.n.Inputs[0])
	_, voff := r.operand(v.n.Inputs[2])
	_, posoff := r.operand(v.n.Inputs[3])
	var qheads, qoff, doff uint32
	if f.q >= 0 {
		qheads = uint32(a.Int("heads"))
		_, qoff = r.operand(r.s.e.vals[f.q].n.Inputs[0])
		_, doff = r.operand(f.q)
	}
	hd := a.Int("head_dim")
	pairs := r.T * (int(qheads) + a.Int("kv_heads")) * hd / 2
	if r.s.kvType.Quantized() {
		// The cache's invocations take 64 values each (rope_kv.comp).
		pairs = r.T * (int(qheads)*hd/2 + (a.Int("kv_heads")*hd+63)/64)
	}
	return r.dispatch("rope_kv_"+kvt, strided(pairs, 64), []uint32{qheads, uint32(a.Int("kv_heads")), uint32(hd), uint32(rp.Dims / 2),
		boolWord(rk.n.Attrs.Bool("neox")), uint32(r.T), qoff, doff, koff, voff, posoff, uint32(r.s.e.cellWords()), uint32(r.s.tableOff[rk.rope])},
		Whole(r.s.arena), Whole(r.s.table), Whole(r.s.step), Whole(r.s.arena), Whole(r.s.kc[v.kv]), Whole(r.s.vc[v.kv]))
}

// matmulTokens is the token block of one matmul workgroup (NT in
// matmul.comp).
const matmulTokens = 8

// matmulWG is the matmul shaders' workgroup size: weight rows per
// workgroup (matmul_tiled's tiles have as many rows).
const matmulWG = 64

// tiledTokens is the token side of matmul_tiled's tiles; batches of more
// than half a tile take it.
const tiledTokens = 64

// coopPairTokens is the token side of the tensor-core tiles with two
// weights (matmul_coop_gateup_*, matmul_coop_geglu_*: F16_TT and Q_TT in
// matmul_tiled.comp), 64 rows × 128 tokens, except where they read Q8_K
// activations (the K-quants' int8 tiles: 64 × 64; Q4_K's binary16 gate·up
// reads pairs and takes 128).
const coopPairTokens = 128

// tiles says whether matmuls of ntok tokens take matmul_tiled's tiles
// (where their weight type has them).
func (r *recorder) tiles(ntok int) bool { return r.s.e.tiles(ntok) }

func (e *Executable) tiles(ntok int) bool {
	return ntok > tiledTokens/2 && e.d.props.Limits.MaxComputeWorkGroupInvocations >= 256
}

// coopKernel is the tensor-core variant (matmul_coop_*) a matmul node n
// takes for its weights of type wt, if there is one.
func coopKernel(n *graph.Node, wt graph.DType) (shaders.Kernel, error) {
	return shaders.Lookup("matmul_coop_" + coopEpilogue[n.Op] + weightKernel[wt])
}

// cm2Kernel is the cooperative-matrix-2 variant (matmul_cm2_*) a matmul
// node n takes for its weights of type wt, if there is one.
func cm2Kernel(n *graph.Node, wt graph.DType) (shaders.Kernel, error) {
	name := "matmul_cm2_" + coopEpilogue[n.Op] + weightKernel[wt]
	return firstVariant(name+cm2Tile(), name)
}

// firstVariant is the first of names the shader index has: a measured
// shape the environment names, then the default one.
func firstVariant(names ...string) (k shaders.Kernel, err error) {
	for _, name := range names {
		if k, err = shaders.Lookup(name); err == nil {
			return k, nil
		}
	}
	return k, err
}

// cm2Tile is the tile-shape suffix of the matmul_cm2 variants to take
// where the node's epilogue has one (WEFT_VULKAN_CM2_TILE, e.g. "_w128":
// shadergen's cm2Others, for measuring them), else the default shapes'.
func cm2Tile() string { return os.Getenv("WEFT_VULKAN_CM2_TILE") }

// coopPairs says whether the tensor-core tiles of a matmul node n read
// binary16 pairs (round_f16x2's layout) instead of its weight type's
// activations: those of F16 weights, and of weights the kernel decodes to
// binary16 (binary16Weights).
func coopPairs(n *graph.Node, wt graph.DType) bool {
	k, err := coopKernel(n, wt)
	return err == nil && binary16Weights(k)
}

// coopTile is the tile of a matmul node n's tensor-core variant for
// weights of type wt: its Q_TR rows × Q_TT tokens where shadergen gives
// them (a one-weight tile of another shape), else rows × tokens.
func coopTile(n *graph.Node, wt graph.DType, rows, tokens int) (int, int) {
	k, err := coopKernel(n, wt)
	if err != nil {
		return rows, tokens
	}
	if tr, ok := k.DefineInt("Q_TR"); ok && tr > 0 {
		rows = tr
	}
	if tt, ok := k.DefineInt("Q_TT"); ok && tt > 0 {
		tokens = tt
	}
	return rows, tokens
}

// coopEpilogue is the matmul_coop variant's epilogue part of a matmul op.
var coopEpilogue = map[string]string{ops.MatMulAdd: "add_", ops.MatMulBias: "bias_", ops.MatMulGateUpSwiGLU: "gateup_", ops.MatMulGateUpGeGLU: "geglu_"}

// matmulShader is the shader family a matmul node of ntok tokens takes
// (matvec, matmul, matmul_tiled, matmul_coop or matmul_cm2) and whether
// it reads binary16 pairs (coopPairs; matmul_cm2 always does).
func (e *Executable) matmulShader(n *graph.Node, ntok int) (shader string, pairs bool) {
	ws := ops.MatMulWeights(n)
	everyWeight := func(has func(graph.DType) bool) bool {
		for _, id := range ws {
			if !has(e.g.Nodes[id].Type.DType) {
				return false
			}
		}
		return true
	}
	// Batches up to half a tile (decode, a server's few sequences) take
	// matvec.comp, a workgroup per weight row and matmulTokens tokens,
	// blocks of tokens in z: measured on the H100, a 16-token batch of the
	// FFN down (Q4_0 2048×5632) took 622 µs in matmul.comp (only rows/64
	// workgroups) and takes 68 µs this way; a 16-token step of the 1.1B
	// model fell from 36.4 to 7.3 ms. Larger batches take matmul_tiled,
	// or matmul.comp (one invocation per row in workgroups of matmulWG
	// rows) on devices without 256 invocations; weight types with neither
	// take matvec.comp.
	switch {
	case e.tiles(ntok) && everyWeight(hasKernel("matmul_tiled_")):
		// Prefill: on cooperative matrix 2 where the device runs the
		// node's variant for every weight (F16: matmul_cm2.comp), else
		// tiles of 64 rows × 64 tokens staged in shared memory, their sums
		// by tensor cores where the device runs the node's variant for
		// every weight (int8 or binary16 matrices: runsCoop).
		runsVariant := func(variant func(*graph.Node, graph.DType) (shaders.Kernel, error)) bool {
			return everyWeight(func(wt graph.DType) bool {
				k, err := variant(n, wt)
				return err == nil && runsCoop(k, e.d.coopInt8, e.d.coopF16, e.d.coop2)
			})
		}
		if runsVariant(cm2Kernel) {
			return "matmul_cm2", true
		}
		runs := runsVariant(coopKernel)
		if !runs {
			return "matmul_tiled", false
		}
		return "matmul_coop", coopPairs(n, e.g.Nodes[ws[0]].Type.DType)
	case ntok <= tiledTokens/2 || !everyWeight(hasKernel("matmul_")):
		return "matvec", false
	}
	return "matmul", false
}

// readersTakePairs says whether every reader of node id, all matmuls
// (fusedNormQuant), reads binary16 pairs at ntok tokens.
func (e *Executable) readersTakePairs(id, ntok int) bool {
	users := e.users[id]
	for _, u := range users {
		if _, pairs := e.matmulShader(e.g.Nodes[u], ntok); !pairs {
			return false
		}
	}
	return len(users) > 0
}

func (r *recorder) matmul(v *value, dst Range, doff uint32) error {
	n := v.n
	x, xoff := r.operand(n.Inputs[0])
	ntok := r.rows(r.in(v, 0))
	ws := ops.MatMulWeights(n)
	cols := r.in(v, 0).width
	// Block-quantized weights take Q8_0, Q8_1 or Q8_K activations,
	// quantized once; F16 and BF16 weights take binary16- or
	// bfloat16-rounded activations (one kind of
	// activations per node, checked by Supports).
	wt0 := r.s.e.g.Nodes[ws[0]].Type.DType
	act := func(wt graph.DType) (Range, uint32) {
		if wt != gguf.TypeF32 {
			return Whole(r.s.scratch), r.scratchOff
		}
		return x, xoff
	}
	shader, pairs := r.s.e.matmulShader(n, ntok)
	vec := shader == "matvec"
	spec, perGroup := "", matmulTokens
	rowsPer := 1         // weight rows a matvec workgroup
	tileRows := matmulWG // weight rows a matmul, matmul_tiled or matmul_coop workgroup
	switch {
	case shader == "matmul_coop":
		perGroup = tiledTokens
		tileRows, perGroup = coopTile(n, wt0, tileRows, perGroup)
	case shader == "matmul_tiled":
		perGroup = tiledTokens
	case shader == "matmul_cm2":
		// Its variant's tile: CM_TR rows × CM_TT tokens.
		k, err := cm2Kernel(n, wt0)
		if err != nil {
			return err
		}
		tr, _ := k.DefineInt("CM_TR")
		tt, _ := k.DefineInt("CM_TT")
		if tr <= 0 || tt <= 0 {
			return fmt.Errorf("%s: no tile shape (CM_TR, CM_TT)", k.Name)
		}
		tileRows, perGroup, spec = tr, tt, strings.TrimPrefix(k.Name, "matmul_cm2_"+coopEpilogue[n.Op]+weightKernel[wt0])
	case vec && ntok == 1:
		// A decode step: the one-token variant holds 1/8 of the sums, so
		// it needs fewer registers and more rows run at once.
		perGroup = 1
		spec, rowsPer = r.decodeMatvecSpec(wt0, cols)
	}
	// The binary16 tensor-core tiles (coopPairs) take the rounded
	// activations as binary16 pairs (half the bytes and loads of float32
	// values).
	akind := actKind(wt0)
	if pairs {
		akind = "f16"
	}
	if akind != "f32" && (r.scratch != n.Inputs[0] || r.scratchPairs != pairs) {
		name, groups := "quantize_"+akind, strided(ntok*cols, 64) // an invocation per value
		switch akind {
		case "q8_k":
			groups = [3]uint32{uint32(min(ntok*cols/256, 65535)), 1, 1} // one workgroup per super-block
			if ntok == 1 {
				name = "quantize_q8_k_lanes" // a decode step's: an invocation per value
			}
		case "f16", "bf16":
			name, groups = "round_"+akind, strided(ntok*cols, 64)
			if pairs {
				name = "round_f16x2"
			}
		}
		if err := r.dispatch(name, groups, []uint32{uint32(cols), uint32(ntok), xoff, 0}, x, Whole(r.s.scratch)); err != nil {
			return err
		}
		r.p.Stamp(name)
		r.p.Barrier()
		r.scratch, r.scratchOff, r.scratchPairs = n.Inputs[0], 0, pairs
	}
	// A folded norm's blocks (foldNorms): its reader's NORM_IN variant
	// (matvec_…nq…) scales them, the norm's eps after the push constants.
	nq, eps := "", []uint32(nil)
	if r.normIn >= 0 && r.normIn == n.Inputs[0] && r.scratch == n.Inputs[0] {
		if shader != "matvec" || perGroup != 1 {
			return fmt.Errorf("a folded norm's blocks read by a %s of %d tokens", shader, ntok)
		}
		nq, eps = "nq_", []uint32{f32bits(r.s.e.g.Nodes[r.normIn].Attrs.Float("eps"))}
	}
	groups := func(rowsW int) [3]uint32 {
		n := (rowsW + tileRows - 1) / tileRows // matmul: 64 rows a workgroup, as matmul_tiled
		if vec {
			n = (rowsW + rowsPer - 1) / rowsPer
		}
		gx, gy := r.s.e.d.RowGroups(uint32(n))
		return [3]uint32{gx, gy, uint32((ntok + perGroup - 1) / perGroup)}
	}
	// Each dispatch covers one row chunk of the weights (weightChunks):
	// its rows, its output columns from row0 on, every token's row of
	// the output (and residual) rowsW apart.
	chunked := func(kernel string, w, other *value, dst Range, doff uint32, res Range, roff uint32) error {
		rowsW := int(w.n.Type.Shape[0].N)
		xa, xaoff := act(w.n.Type.DType)
		for c := range w.w {
			row0 := c * w.chunkRows
			rows := min(w.chunkRows, rowsW-row0)
			bufs := []Range{weightRange(w, c), xa, dst}
			switch {
			case other != nil:
				bufs = append(bufs, weightRange(other, c))
			case res.Buf != nil:
				bufs = append(bufs, res)
			}
			push := append([]uint32{uint32(cols), uint32(rows), uint32(ntok), xaoff, doff + uint32(row0), roff + uint32(row0), uint32(rowsW)}, eps...)
			if err := r.dispatch(kernel+spec, groups(rows), push, r.s.e.withGrid(w.n.Type.DType, bufs...)...); err != nil {
				return err
			}
		}
		return nil
	}
	w := func(i int) *value { return &r.s.e.vals[ws[i]] }
	kind := weightKernel[wt0]
	if shader == "matmul_coop" && akind != "q8_k" && (n.Op == ops.MatMulGateUpSwiGLU || n.Op == ops.MatMulGateUpGeGLU) {
		perGroup = coopPairTokens
	}
	switch n.Op {
	case ops.MatMul:
		return chunked(shader+"_"+nq+kind, w(0), nil, dst, doff, Range{}, 0)
	case ops.MatMulAdd:
		res, roff := r.operand(n.Inputs[2])
		if out := r.normOut(v, w(0), spec, groups, dst, doff, res, roff, cols, shader == "matvec" && perGroup == 1 && nq == ""); out != nil {
			return out()
		}
		return chunked(shader+"_add_"+kind, w(0), nil, dst, doff, res, roff)
	case ops.MatMulGateUpSwiGLU:
		g, u := w(0), w(1)
		if g.n.Type.DType != u.n.Type.DType || !g.n.Type.Shape.Equal(u.n.Type.Shape) {
			return fmt.Errorf("gate %s and up %s differ", g.n.Type, u.n.Type)
		}
		if tail := r.gateUpTail(n, g, u, spec, groups, dst, doff, ntok, cols, nq, eps); tail != nil {
			return tail()
		}
		if tail := r.gateUpTileTail(n, g, u, shader, groups, dst, doff, ntok, cols); tail != nil {
			return tail()
		}
		return chunked(shader+"_gateup_"+nq+kind, g, u, dst, doff, Range{}, 0)
	case ops.MatMulBias:
		// The bias row's element offset goes where the residual's would;
		// each chunk adds its own rows' biases (eoff + row0).
		b, boff := r.operand(n.Inputs[2])
		return chunked(shader+"_bias_"+kind, w(0), nil, dst, doff, b, boff)
	case ops.MatMulGateUpGeGLU:
		g, u := w(0), w(1)
		if g.n.Type.DType != u.n.Type.DType || !g.n.Type.Shape.Equal(u.n.Type.Shape) {
			return fmt.Errorf("gate %s and up %s differ", g.n.Type, u.n.Type)
		}
		return chunked(shader+"_geglu_"+kind, g, u, dst, doff, Range{}, 0)
	case ops.MatMulQKV:
		if p := r.s.e.packs[n.ID]; p != nil && vec {
			// One dispatch over the packed weights (packQKV).
			rows := p.start[2] + p.rows[2]
			push := append([]uint32{uint32(cols), uint32(rows), uint32(ntok), xoff, doff, 0, 0,
				uint32(p.rows[0]), uint32(p.start[1]), uint32(p.rows[1]), uint32(p.start[2]), uint32(r.s.e.maxTokens)}, eps...)
			xa, xaoff := act(wt0)
			push[3] = xaoff
			return r.dispatch(shader+"_qkv_"+nq+kind+spec, groups(rows), push, r.s.e.withGrid(wt0, Whole(p.buf), xa, dst)...)
		}
		// Part i is [maxTokens, rows_i] after the parts before it.
		off := doff
		for i := range ws {
			if err := chunked(shader+"_"+nq+weightKernel[w(i).n.Type.DType], w(i), nil, dst, off, Range{}, 0); err != nil {
				return err
			}
			off += uint32(int(w(i).n.Type.Shape[0].N) * r.s.e.maxTokens)
		}
		return nil
	}
	return fmt.Errorf("no Vulkan matmul for %s", n.Op)
}

// gateUpTail returns the recording of a decode step's gate·up n that
// also writes the FFN down's Q8_0, Q8_1 or Q8_K activations (matvec.comp's
// OUT_ variants: the last workgroup of each block of 32 rows, or
// super-block of 256, quantizes it), or nil where that does not apply:
// fusedNormQuant chose n, one token, one row chunk of weights, a variant
// for the type, room in the scratch beside n's own activations (which
// its other workgroups are still reading) for the down's. A decode step
// saves the down's quantize dispatch and barrier.
func (r *recorder) gateUpTail(n *graph.Node, g, u *value, spec string, groups func(int) [3]uint32, dst Range, doff uint32, ntok, cols int, nq string, eps []uint32) func() error {
	kind := r.s.e.normQuant[n.ID]
	rows := int(g.n.Type.Shape[0].N)
	name := "matvec_gateup_" + nq + weightKernel[g.n.Type.DType] + "_" + kind
	if kind == "" || ntok != 1 || len(g.w) != 1 || len(u.w) != 1 || r.s.tails == nil {
		return nil
	}
	if _, err := shaders.Lookup(name); err != nil {
		return nil
	}
	own := actWords(actKind(g.n.Type.DType), int64(cols))
	if nq != "" {
		own += int64(cols / 32) // a folded norm's blocks are followed by their Σh² (normOut)
	}
	off := (r.scratchOff + uint32(own) + 63) &^ 63 // words, past n's own activations
	if int64(off)+actWords(kind, int64(rows)) > r.s.e.q8Words {
		return nil
	}
	region := r.s.tailOff[tailGateUp]
	if kind == "q8_k" {
		region = r.s.tailOff[tailGateUpK]
	}
	return func() error {
		xoff := r.scratchOff
		push := append([]uint32{uint32(cols), uint32(rows), 1, xoff, doff, off, uint32(rows)}, eps...)
		bufs := []Range{weightRange(g, 0), Whole(r.s.scratch), dst, weightRange(u, 0), Whole(r.s.scratch), {Buf: r.s.tails, Offset: region}}
		if err := r.dispatch(name+spec, groups(rows), push, bufs...); err != nil {
			return err
		}
		r.scratch, r.scratchOff, r.scratchPairs = n.ID, off, false
		return nil
	}
}

// gateUpTileTail returns the recording of a prefill gate·up n on tiles
// (shader: matmul_tiled or matmul_coop) that also writes its FFN down's
// Q8_0 or Q8_1 activations (matmul_tiled.comp OUT_Q8_0, OUT_Q8_1), or nil
// where that does not apply: no variant (gateUpTileKernel), weights in
// more than one row chunk, no room in the scratch beside n's own
// activations (tileTailWords).
// A prefill step saves the down's quantize dispatch, its barrier and its
// read of n's output.
func (r *recorder) gateUpTileTail(n *graph.Node, g, u *value, shader string, groups func(int) [3]uint32, dst Range, doff uint32, ntok, cols int) func() error {
	rows := int(g.n.Type.Shape[0].N)
	name, ok := r.s.e.gateUpTileKernel(n, shader)
	if !ok || len(g.w) != 1 || len(u.w) != 1 {
		return nil
	}
	own, down := r.s.e.tileTailWords(n, ntok)
	off := (r.scratchOff + uint32(own) + 63) &^ 63 // words, past n's own activations
	if int64(off)+down > r.s.e.q8Words {
		return nil
	}
	return func() error {
		push := []uint32{uint32(cols), uint32(rows), uint32(ntok), r.scratchOff, doff, 0, uint32(rows), off}
		bufs := []Range{weightRange(g, 0), Whole(r.s.scratch), dst, weightRange(u, 0), Whole(r.s.scratch)}
		if err := r.dispatch(name, groups(rows), push, bufs...); err != nil {
			return err
		}
		r.scratch, r.scratchOff, r.scratchPairs = n.ID, off, false
		return nil
	}
}

// normOut returns the recording of a decode step's MatMulAdd v (weight
// w) that also writes its folded norm's blocks (foldNorms; matvec.comp
// NORM_OUT: the last workgroup of each 32 rows writes their block of h·w
// as Q8_0, or with NORM_K of each 256 rows their Q8_K super-block, and
// the Σh² of each 32 rows) into the scratch beside v's own activations
// (which its other workgroups are still reading), or nil where that does
// not apply: no folded norm reads v, not a decode matvec, weights in
// chunks, no room. The norm then records nothing and its reader takes
// its NORM_IN variant (pendingNorm).
func (r *recorder) normOut(v, w *value, spec string, groups func(int) [3]uint32, dst Range, doff uint32, res Range, roff uint32, cols int, decode bool) func() error {
	e := r.s.e
	norm, ok := e.normFold[v.n.ID]
	if !ok || !decode || r.T != 1 || len(w.w) != 1 || r.s.tails == nil {
		return nil
	}
	rows := int(w.n.Type.Shape[0].N)
	kind := e.normQuant[norm] // the blocks': Q8_0, or Q8_K super-blocks (NORM_K)
	own := actWords(actKind(w.n.Type.DType), int64(cols))
	off := (r.scratchOff + uint32(own) + 63) &^ 63 // words, past v's own activations
	if int64(off)+actWords(kind, int64(rows))+int64(rows/32) > e.q8Words {
		return nil
	}
	region := r.s.tailOff[tailNorm]
	if kind == "q8_k" {
		region = r.s.tailOff[tailNormK]
	}
	nn := e.g.Nodes[norm]
	nw, nwoff := r.operand(nn.Inputs[1])
	return func() error {
		push := []uint32{uint32(cols), uint32(rows), 1, r.scratchOff, doff, roff, uint32(rows), off, nwoff}
		bufs := []Range{weightRange(w, 0), Whole(r.s.scratch), dst, res, Whole(r.s.scratch), {Buf: r.s.tails, Offset: region}, nw}
		if err := r.dispatch("matvec_add_"+weightKernel[w.n.Type.DType]+normFoldOut[kind]+spec, groups(rows), push, bufs...); err != nil {
			return err
		}
		r.pendingNorm, r.pendingOff = norm, off
		return nil
	}
}

// weightRange binds row chunk c of weight v: its buffer, from the
// weight's offset in it (a packed MatMulQKV weight's part).
func weightRange(v *value, c int) Range {
	return Range{Buf: v.w[c], Offset: v.wOff}
}

// capInv is 1/cap in float32, as ggml computes the soft-capping's first
// scale on the host (0 for no cap).
func capInv(cap float32) float32 {
	if cap <= 0 {
		return 0
	}
	return 1 / cap
}

// decodeMatvecSpec is the kernel-name suffix of a decode step's matvec
// with rows of cols weights of type wt (one token, the rows per
// workgroup, the workgroup size: see kernel), and those rows.
//
// Block-quantized rows of fewer than 4096 columns take two rows a
// workgroup of 64, 32 invocations a row (where a subgroup fits in 32): an
// H100 keeps 32 workgroups a multiprocessor in flight, so one row a
// workgroup ran the gate·up's 5632 rows in 1.33 waves. Measured there,
// Q4_0 decode: gate·up 249 → 230 µs a token, QKV 148 → 134, attention
// output 138 → 129, output 44 → 39; tg64 Q4_0 785–795 → 816–839, Q8_0
// 701–709 → 709–730. The FFN down (5632 columns) was slower so (266 →
// 273), and so were F16's rows (470–474 → 446–450).
func (r *recorder) decodeMatvecSpec(wt graph.DType, cols int) (spec string, rows int) {
	if wt.BlockSize() > 1 && cols < 4096 && 32%r.s.e.d.info.SubgroupSize == 0 {
		return "#1,2", 2 // the index's workgroup of 64
	}
	return "#1" + matvecWorkgroup(wt), 1
}

// matvecWorkgroup is the kernel-name suffix (@W, see kernel) that sizes a
// decode step's matvec workgroups for weights of type wt; "" keeps the
// shader index's 64. Float weights take 128: their
// invocations step a word (two weights) at a time, so a 2048-column row
// is 16 steps each at 64; at 128, 8 (measured on the H100: F16 decode
// 379–400 → 430–452 tok/s, 256 and mixed sizes in between). Block-quantized
// rows keep 64 (32, 128 and 256 measured slower or within noise).
func matvecWorkgroup(wt graph.DType) string {
	switch wt {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16:
		return "@128"
	}
	return ""
}
