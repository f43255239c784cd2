package cpu

import (
	"fmt"
	"sort"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

func init() {
	kernels[ops.MatMulQKV] = runMatMulQKV
	kernels[ops.MatMulGateUpSwiGLU] = runMatMulGateUp
	kernels[ops.MatMulAdd] = runMatMulAdd
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
// maxTokens rows.
func viewDelta(n *graph.Node, maxTokens int) int { return n.Attrs.Int("start") * maxTokens }

// maxElems is the number of elements of t for a batch of maxTokens.
func maxElems(t graph.Type, maxTokens int) int {
	if len(t.Shape) > 0 && !t.Shape[0].IsSym() {
		return int(t.Shape[0].N * t.Shape.PerRow())
	}
	return int(t.Shape.PerRow()) * maxTokens
}

// matmulWeights returns the weight operands of a matmul-family node.
func matmulWeights(n *graph.Node) []int {
	switch n.Op {
	case ops.MatMul, ops.MatMulAdd:
		return n.Inputs[1:2]
	case ops.MatMulQKV, ops.MatMulGateUpSwiGLU:
		return n.Inputs[1:]
	}
	return nil
}

// actScratchBytes is the activation-quantization scratch n needs: one
// region per distinct dot-product type of its weights.
func actScratchBytes(g *graph.Graph, n *graph.Node, maxTokens int) (int, error) {
	seen := map[gguf.TensorType]bool{}
	total := 0
	for _, id := range matmulWeights(n) {
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
		total += int(rb) * maxTokens
	}
	packed := map[gguf.TensorType]bool{}
	for _, id := range matmulWeights(n) {
		if w := g.Nodes[id]; w.Layout != nil && !packed[w.Type.DType] {
			packed[w.Type.DType] = true
			total += simd.PackActBytes(int(w.Type.Shape[1].N), maxTokens)
		}
	}
	return total, nil
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
	// packed weights (simd.Repack) with their packed activations.
	packed simd.PackedGemmFunc
	pact   []byte
}

// The packed layout's row groups must not straddle tiles.
var _ = [1]int{}[matmulTile%simd.PackRows]

// quantizeParts quantizes x once per distinct dot-product type among the
// weight operands of v.
func (s *State) quantizeParts(v *value, weights []int) ([]matmulPart, error) {
	x := s.input(v, 0)
	xs, nTok, cols := s.f32(x), s.rows(x), x.width
	parts := make([]matmulPart, len(weights))
	done, packs := map[gguf.TensorType][]byte{}, map[gguf.TensorType][]byte{}
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
		act, ok := done[at]
		if !ok {
			act = s.act[used : used+int(aRow)*nTok]
			used += int(aRow) * nTok
			quantizeRows(at, xs, act, cols, int(aRow), nTok, s.p.threads)
			done[at] = act
		}
		parts[i] = matmulPart{w: w.raw, rows: int(w.node.Type.Shape[0].N), cols: cols, wRow: int(wRow), aRow: int(aRow), act: act, dot: simd.VecDotRows(wt), gemm: simd.Gemm(wt)}
		if w.pack {
			pact, ok := packs[wt]
			if !ok {
				pact = s.act[used : used+simd.PackActBytes(cols, nTok)]
				used += len(pact)
				packActs(wt, act, pact, cols, int(aRow), nTok, s.p.threads)
				packs[wt] = pact
			}
			parts[i].packed, parts[i].pact = simd.PackedGemm(wt), pact
		}
	}
	return parts, nil
}

// packActs rearranges the Q8_0 rows act into the packed kernels' form.
func packActs(wt gguf.TensorType, act, pact []byte, cols, aRow, nTok, threads int) {
	parallelFor(nTok, threads, 8, func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			simd.PackActRow(wt, act[t*aRow:(t+1)*aRow], cols, t, nTok, pact)
		}
	})
}

func quantizeRows(at gguf.TensorType, xs []float32, act []byte, cols, aRow, nTok, threads int) {
	quantize := simd.QuantizeRow(at)
	parallelFor(nTok, threads, 8, func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			quantize(xs[t*cols:(t+1)*cols], act[t*aRow:(t+1)*aRow])
		}
	})
}

func (m *matmulPart) tiles() int { return (m.rows + matmulTile - 1) / matmulTile }

// tile computes weight rows [r0, r1) of tile k against all nTok activation
// rows: row r of token t goes to out[t*stride + r-r0]. Every matmul kernel,
// fused or not, goes through here so that they agree bit for bit.
func (m *matmulPart) tile(k, nTok int, out []float32, stride int) (r0, r1 int) {
	r0, r1 = k*matmulTile, min(m.rows, (k+1)*matmulTile)
	if m.packed != nil {
		// Tiles start at a group, which lies where its first row would.
		m.packed(m.cols, m.w[r0*m.wRow:], r1-r0, m.pact, nTok, out, stride)
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
	parts, err := s.quantizeParts(v, matmulWeights(v.node))
	if err != nil {
		return err
	}
	nTok, buf := s.rows(s.input(v, 0)), s.slots[v.slot]
	first := make([]int, len(parts)+1) // first global tile of each part
	offs := make([]int, len(parts))    // element offset of each part
	for i := range parts {
		first[i+1] = first[i] + parts[i].tiles()
		if i > 0 {
			offs[i] = offs[i-1] + parts[i-1].rows*s.p.maxTokens
		}
	}
	parallelFor(first[len(parts)], s.p.threads, 1, func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			i := sort.SearchInts(first, k+1) - 1
			m := &parts[i]
			r0 := (k - first[i]) * matmulTile
			m.tile(k-first[i], nTok, buf[offs[i]+r0:], m.rows)
		}
	})
	return nil
}

// runMatMulGateUp computes the gate product, applies SiLU to the whole
// result as the unfused SiLU node does, then multiplies by the up product.
func runMatMulGateUp(s *State, v *value) error {
	parts, err := s.quantizeParts(v, matmulWeights(v.node))
	if err != nil {
		return err
	}
	gate, up := &parts[0], &parts[1]
	nTok, dst := s.rows(s.input(v, 0)), s.f32(v)
	parallelFor(gate.tiles(), s.p.threads, 1, func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			gate.tile(k, nTok, dst[k*matmulTile:], gate.rows)
		}
	})
	ref.SiLU(dst, dst)
	parallelFor(up.tiles(), s.p.threads, 1, func(w, lo, hi int) {
		tmp := s.tileScratch(w)
		for k := lo; k < hi; k++ {
			r0, r1 := up.tile(k, nTok, tmp, matmulTile)
			for t := 0; t < nTok; t++ {
				row := dst[t*up.rows+r0 : t*up.rows+r1]
				ref.Mul(row, row, tmp[t*matmulTile:t*matmulTile+r1-r0])
			}
		}
	})
	return nil
}

// runMatMulAdd adds the residual to each tile of products; dst may alias
// the residual, as every element reads its own residual first.
func runMatMulAdd(s *State, v *value) error {
	parts, err := s.quantizeParts(v, matmulWeights(v.node))
	if err != nil {
		return err
	}
	m := &parts[0]
	nTok, dst, res := s.rows(s.input(v, 0)), s.f32(v), s.f32(s.input(v, 2))
	parallelFor(m.tiles(), s.p.threads, 1, func(w, lo, hi int) {
		tmp := s.tileScratch(w)
		for k := lo; k < hi; k++ {
			r0, r1 := m.tile(k, nTok, tmp, matmulTile)
			for t := 0; t < nTok; t++ {
				ref.Add(dst[t*m.rows+r0:t*m.rows+r1], tmp[t*matmulTile:t*matmulTile+r1-r0], res[t*m.rows+r0:t*m.rows+r1])
			}
		}
	})
	return nil
}

// normMul normalises and scales one row at a time, while it is in cache.
func normMul(norm func(dst, x []float32, n int, eps float32)) kernel {
	return func(s *State, v *value) error {
		x, w, dst := s.f32(s.input(v, 0)), s.f32(s.input(v, 1)), s.f32(v)
		n, eps := v.width, v.node.Attrs.Float("eps")
		for r := 0; r+n <= len(x); r += n {
			norm(dst[r:r+n], x[r:r+n], n, eps)
			ref.Mul(dst[r:r+n], dst[r:r+n], w)
		}
		return nil
	}
}

func runLayerNormMulAdd(s *State, v *value) error {
	x, w, b, dst := s.f32(s.input(v, 0)), s.f32(s.input(v, 1)), s.f32(s.input(v, 2)), s.f32(v)
	n, eps := v.width, v.node.Attrs.Float("eps")
	for r := 0; r+n <= len(x); r += n {
		ref.LayerNorm(dst[r:r+n], x[r:r+n], n, eps)
		ref.Mul(dst[r:r+n], dst[r:r+n], w)
		ref.Add(dst[r:r+n], dst[r:r+n], b)
	}
	return nil
}
