package cpu

import (
	"fmt"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/safemath"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

func init() {
	kernels[ops.MatMulQKV] = runMatMulQKV
	kernels[ops.MatMulGateUpSwiGLU] = runMatMulGateUp(simd.SiLU)
	kernels[ops.MatMulGateUpGeGLU] = runMatMulGateUp(simd.GELU)
	kernels[ops.MatMulAdd] = runMatMulAdd
	kernels[ops.MatMulBias] = runMatMulBias
	kernels[ops.RMSNormMul] = normMul(ref.RMSNorm)
	kernels[ops.LayerNormMul] = normMul(ref.LayerNorm)
	kernels[ops.LayerNormMulAdd] = runLayerNormMulAdd
	kernels[ops.Part] = func(*State, *value) error { return nil } // a view: its parent writes it
	kernels[ops.Copy] = func(s *State, v *value) error {
		copy(s.f32(v), s.f32(s.input(v, 0)))
		return nil
	}
}

// isView reports whether n's result lies inside its input's buffer.
func isView(n *graph.Node) bool { return n.Op == ops.Part }

// viewDelta is where a Part lies in its parent's buffer, in elements: a
// multi-part result stores its parts one after another, each sized for
// maxTokens rows. ok is false when that overflows.
func viewDelta(n *graph.Node, maxTokens int) (int, bool) {
	d, ok := safemath.Mul(int64(n.Attrs.Int("start")), int64(maxTokens))
	if !ok {
		return 0, false
	}
	return safemath.Int(d)
}

// maxElems is the number of elements of t for a batch of maxTokens; ok
// is false when that overflows an int.
func maxElems(t graph.Type, maxTokens int) (int, bool) {
	var c safemath.Calc
	n := int64(1)
	for i, d := range t.Shape {
		x := d.N
		if i == 0 && d.IsSym() {
			x = int64(maxTokens)
		}
		n = c.Mul(n, x)
	}
	if c.Overflow() {
		return 0, false
	}
	return safemath.Int(n)
}

// actScratchBytes is the activation-quantization scratch n needs: one
// region per distinct dot-product type of its weights.
func actScratchBytes(g *graph.Graph, n *graph.Node, maxTokens int) (int, error) {
	seen := map[gguf.TensorType]bool{}
	var c safemath.Calc
	total := int64(0)
	for _, id := range ops.MatMulWeights(n) {
		wt := g.Nodes[id].Type
		at := quant.VecDotType(wt.DType)
		if seen[at] {
			continue
		}
		seen[at] = true
		rb, err := at.RowBytes(uint64(wt.Shape[1].N))
		if err != nil {
			return 0, err
		}
		total = c.Add(total, c.Mul(int64(rb), int64(maxTokens)))
	}
	packed := map[gguf.TensorType]bool{}
	for _, id := range ops.MatMulWeights(n) {
		if w := g.Nodes[id]; w.Layout != nil && !packed[w.Type.DType] {
			packed[w.Type.DType] = true
			// simd.PackActBytes, checked: nTok × (n/32) blocks
			total = c.Add(total, c.Mul(c.Mul(int64(maxTokens), w.Type.Shape[1].N/32), int64(simd.PackActBytes(32, 1))))
		}
	}
	if n, ok := safemath.Int(total); ok && !c.Overflow() {
		return n, nil
	}
	return 0, fmt.Errorf("activation scratch for a batch of %d tokens overflows: use a smaller batch", maxTokens)
}

// matmulPart is one weight of a (fused) matmul with its quantized
// activations. Products are computed exactly as runMatMul computes them
// (the same SIMD kernels over the same tiles of weight rows), so fused and
// unfused graphs agree bit for bit; keep the two in step.
type matmulPart struct {
	w          []byte
	rows, cols int
	wRow, aRow int
	act        []byte
	dot        simd.RowsFunc // one token
	gemm       simd.GemmFunc // several tokens
	// packed weights (simd.Repack) of type wt with their packed activations.
	packed simd.PackedGemmFunc
	pact   []byte
	wt     gguf.TensorType
}

// The packed layout's row groups must not straddle tiles.
var _ = [1]int{}[matmulTile%simd.PackRows]

// quantizeParts quantizes x once per distinct dot-product type among the
// weight operands of v.
func (s *State) quantizeParts(v *value, weights []int) ([]matmulPart, error) {
	x := s.input(v, 0)
	xs, nTok, cols := s.f32(x), s.rows(x), x.width
	parts := s.partsFor(v.node.ID, len(weights))
	var done, packs actRegions
	used := 0
	for i, id := range weights {
		w := &s.p.vals[id]
		if w.raw == nil {
			return nil, fmt.Errorf("operand %d is not a weight", i+1)
		}
		wt := w.node.Type.DType
		at := quant.VecDotType(wt)
		aRow, err := at.RowBytes(uint64(cols))
		if err != nil {
			return nil, err
		}
		wRow, _ := wt.RowBytes(uint64(cols))
		act, ok := done.get(at)
		if !ok {
			act = s.act[used : used+int(aRow)*nTok]
			used += int(aRow) * nTok
			s.quantizeRows(at, xs, act, cols, int(aRow), nTok)
			done.put(at, act)
		}
		parts[i] = matmulPart{w: w.raw, rows: int(w.node.Type.Shape[0].N), cols: cols, wRow: int(wRow), aRow: int(aRow), act: act, dot: simd.DecodeRows(wt), gemm: simd.Gemm(wt)}
		if w.pack {
			pact, ok := packs.get(wt)
			if !ok {
				pact = s.act[used : used+simd.PackActBytes(cols, nTok)]
				used += len(pact)
				s.packActs(wt, act, pact, cols, int(aRow), nTok)
				packs.put(wt, pact)
			}
			parts[i].packed, parts[i].pact, parts[i].wt = simd.PackedGemm(wt), pact, wt
		}
	}
	return parts, nil
}

// partsFor returns node id's reusable parts slice of length n.
func (s *State) partsFor(id, n int) []matmulPart {
	if s.parts == nil {
		s.parts = make([][]matmulPart, len(s.p.vals))
	}
	if cap(s.parts[id]) < n {
		s.parts[id] = make([]matmulPart, n)
	}
	return s.parts[id][:n]
}

// actRegions maps a dot-product type to its quantized activations; a
// node has at most a few weight types, so a small array on the stack
// beats a map (which would be allocated on every call).
type actRegions struct {
	n     int
	types [4]gguf.TensorType
	bufs  [4][]byte
}

func (r *actRegions) get(t gguf.TensorType) ([]byte, bool) {
	for i := 0; i < r.n; i++ {
		if r.types[i] == t {
			return r.bufs[i], true
		}
	}
	return nil, false
}

func (r *actRegions) put(t gguf.TensorType, b []byte) {
	if r.n < len(r.types) {
		r.types[r.n], r.bufs[r.n] = t, b
		r.n++
	}
}

// packActs rearranges the Q8_0 rows act into the packed kernels' form.
func (s *State) packActs(wt gguf.TensorType, act, pact []byte, cols, aRow, nTok int) {
	s.jobs.pack = packJob{wt: wt, act: act, pact: pact, cols: cols, aRow: aRow, nTk: nTok}
	parallelFor(nTok, s.p.threads, 8, &s.jobs.pack)
}

func (s *State) quantizeRows(at gguf.TensorType, xs []float32, act []byte, cols, aRow, nTok int) {
	s.jobs.quant = quantJob{quantize: simd.QuantizeRow(at), xs: xs, act: act, cols: cols, aRow: aRow}
	parallelFor(nTok, s.p.threads, 8, &s.jobs.quant)
}

func (m *matmulPart) tiles() int { return (m.rows + matmulTile - 1) / matmulTile }

// tile computes weight rows [r0, r1) of tile k against all nTok activation
// rows: row r of token t goes to out[t*stride + r-r0]. Every matmul kernel,
// fused or not, goes through here so that they agree bit for bit.
func (m *matmulPart) tile(k, nTok int, out []float32, stride int) (r0, r1 int) {
	r0, r1 = k*matmulTile, min(m.rows, (k+1)*matmulTile)
	if m.packed != nil {
		// Tiles start at a group (see the PackRows assertion above).
		m.packed(m.cols, m.w[simd.PackedRowOffset(m.wt, r0, m.cols):], r1-r0, m.pact, nTok, out, stride)
		return r0, r1
	}
	w := m.w[r0*m.wRow : r1*m.wRow]
	if nTok == 1 {
		m.dot(m.cols, w, m.wRow, r1-r0, m.act[:m.aRow], out[:r1-r0])
	} else {
		m.gemm(m.cols, w, m.wRow, r1-r0, m.act[:nTok*m.aRow], m.aRow, nTok, out[:(nTok-1)*stride+r1-r0], stride)
	}
	return r0, r1
}

// tileScratch returns worker w's buffer for one tile of every token. The
// outer slice has one entry per thread from NewState; each worker index
// is used by one goroutine at a time, so filling its entry is race-free.
func (s *State) tileScratch(w int) []float32 {
	need := matmulTile * s.p.maxTokens
	if len(s.tileBufs[w]) < need {
		s.tileBufs[w] = make([]float32, need)
	}
	return s.tileBufs[w]
}

// runMatMulQKV writes each part's [T, rows] result into its own region of
// the node's buffer (see viewDelta), sharing all parts' tiles among threads.
func runMatMulQKV(s *State, v *value) error {
	parts, err := s.quantizeParts(v, ops.MatMulWeights(v.node))
	if err != nil {
		return err
	}
	j := &s.jobs.qkv
	j.parts, j.nTok, j.buf = parts, s.rows(s.input(v, 0)), s.slots[v.slot]
	j.first, j.offs = append(j.first[:0], 0), j.offs[:0] // reuse capacity: no allocation per call
	for i := range parts {
		j.first = append(j.first, j.first[i]+parts[i].tiles())
		off := 0
		if i > 0 {
			off = j.offs[i-1] + parts[i-1].rows*s.p.maxTokens
		}
		j.offs = append(j.offs, off)
	}
	parallelTiles(j.first[len(parts)], s.p.threads, j)
	return nil
}

// runMatMulGateUp computes act(gate)·up tile by tile in one parallel
// pass. SiLU works on groups of 16 from the start of each row, and tiles
// start at multiples of 16, so applying it per tile gives the bits of the
// unfused SiLU over whole rows (the sub-16 tail lands in the last tile
// either way); GELU is element by element.
func runMatMulGateUp(act func(dst, x []float32)) kernel {
	return func(s *State, v *value) error {
		parts, err := s.quantizeParts(v, ops.MatMulWeights(v.node))
		if err != nil {
			return err
		}
		s.jobs.gateUp = gateUpJob{s: s, act: act, gate: &parts[0], up: &parts[1], nTok: s.rows(s.input(v, 0)), dst: s.f32(v)}
		parallelTiles(parts[0].tiles(), s.p.threads, &s.jobs.gateUp)
		return nil
	}
}

// SiLU's vector groups must not straddle tiles (see runMatMulGateUp).
var _ = [1]int{}[matmulTile%16]

// runMatMulAdd adds the residual to each tile of products; dst may alias
// the residual, as every element reads its own residual first.
func runMatMulAdd(s *State, v *value) error {
	parts, err := s.quantizeParts(v, ops.MatMulWeights(v.node))
	if err != nil {
		return err
	}
	s.jobs.add = addJob{s: s, m: &parts[0], nTok: s.rows(s.input(v, 0)), dst: s.f32(v), res: s.f32(s.input(v, 2))}
	parallelTiles(parts[0].tiles(), s.p.threads, &s.jobs.add)
	return nil
}

// runMatMulBias adds the bias row to each tile of products, written in
// place: x·wᵀ then + b, the two roundings of ggml's mul_mat and add.
func runMatMulBias(s *State, v *value) error {
	parts, err := s.quantizeParts(v, ops.MatMulWeights(v.node))
	if err != nil {
		return err
	}
	s.jobs.bias = biasJob{m: &parts[0], nTok: s.rows(s.input(v, 0)), dst: s.f32(v), bias: s.f32(s.input(v, 2))}
	parallelTiles(parts[0].tiles(), s.p.threads, &s.jobs.bias)
	return nil
}

// normMul normalises and scales one row at a time, while it is in cache,
// with the rows (tokens) shared among the threads: the float64 sum of
// each row is a serial chain, so a batch of rows is worth splitting.
func normMul(norm func(dst, x []float32, n int, eps float32)) kernel {
	return func(s *State, v *value) error {
		n := ops.NormGroup(v.node.Attrs, v.width)
		s.jobs.norm = normJob{norm: norm, x: s.f32(s.input(v, 0)), w: s.f32(s.input(v, 1)), dst: s.f32(v), n: n, eps: v.node.Attrs.Float("eps")}
		parallelFor(len(s.jobs.norm.x)/n, s.p.threads, 16, &s.jobs.norm)
		return nil
	}
}

// normJob is normMul's work on rows [lo, hi); with b set it also adds the
// bias (LayerNormMulAdd).
type normJob struct {
	norm         func(dst, x []float32, n int, eps float32)
	x, w, b, dst []float32
	n            int
	eps          float32
}

func (j *normJob) run(_, lo, hi int) {
	for r := lo * j.n; r < hi*j.n; r += j.n {
		row := j.dst[r : r+j.n]
		j.norm(row, j.x[r:r+j.n], j.n, j.eps)
		simd.Mul(row, row, j.w)
		if j.b != nil {
			simd.Add(row, row, j.b)
		}
	}
}

// runLayerNormMulAdd is LayerNorm·w + b, rows shared among the threads
// as in normMul.
func runLayerNormMulAdd(s *State, v *value) error {
	s.jobs.norm = normJob{norm: ref.LayerNorm, x: s.f32(s.input(v, 0)), w: s.f32(s.input(v, 1)), b: s.f32(s.input(v, 2)),
		dst: s.f32(v), n: v.width, eps: v.node.Attrs.Float("eps")}
	parallelFor(len(s.jobs.norm.x)/v.width, s.p.threads, 16, &s.jobs.norm)
	return nil
}
