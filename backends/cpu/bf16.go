package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/hugepage"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/quant"
)

// F16 weights computed as BF16 (Options.F16AsBF16, graphrun --f16-as-bf16):
// every F16 matrix that only matmuls read (a tied table may also be read
// by GetRows) is converted to BF16 once at load, and its Weight node's
// type in the program's copy of the graph becomes BF16, so every kernel
// choice (dot-product type, activation scratch, tiles) follows from the
// graph as for a BF16 model. The plan's graph is not changed.

// releaser is an optional capability of a WeightSource: dropping the
// mapped pages of a tensor whose converted copy replaces it in memory.
type releaser interface {
	ReleaseTensorData(t *gguf.TensorInfo)
}

// asBF16Graph returns a copy of g whose convertible F16 weights (bf16Convertible)
// are BF16, with the IDs of those weights; g itself when there are none.
func asBF16Graph(g *graph.Graph) (*graph.Graph, map[int]bool) {
	readers := map[int][]*graph.Node{}
	for _, n := range g.Nodes {
		for _, in := range slices.Compact(slices.Sorted(slices.Values(n.Inputs))) {
			readers[in] = append(readers[in], n)
		}
	}
	ids := map[int]bool{}
	for _, w := range g.Nodes {
		if bf16Convertible(w, readers[w.ID]) {
			ids[w.ID] = true
		}
	}
	if len(ids) == 0 {
		return g, nil
	}
	c := g.Clone()
	for id := range ids {
		c.Nodes[id].Type.DType = gguf.TypeBF16
	}
	return c, ids
}

// bf16Convertible reports whether w is an F16 matrix in its GGUF layout
// read as a matmul weight at least once and otherwise only as the table
// of a GetRows (a tied embedding, whose lookups then read the BF16 rows).
// Weights that custom ops or elementwise ops read keep their type.
func bf16Convertible(w *graph.Node, readers []*graph.Node) bool {
	if w.Op != "Weight" || w.Type.DType != gguf.TypeF16 || len(w.Type.Shape) != 2 || w.Layout != nil {
		return false
	}
	matmul := false
	for _, r := range readers {
		switch {
		case r.Op == ops.GetRows && r.Inputs[0] == w.ID && !slices.Contains(r.Inputs[1:], w.ID):
		case slices.Contains(ops.MatMulWeights(r), w.ID) && r.Inputs[0] != w.ID:
			matmul = true
		default:
			return false
		}
	}
	return matmul
}

// f16ToBF16Table maps every binary16 bit pattern to its bfloat16: widening
// to float32 is exact, narrowing rounds to nearest even (quant.FP32ToBF16,
// NaNs stay NaNs). 128 KiB, built once on first use.
var f16ToBF16Table = sync.OnceValue(func() []uint16 {
	t := make([]uint16, 1<<16)
	for h := range t {
		t[h] = quant.FP32ToBF16(quant.FP16ToFP32(uint16(h)))
	}
	return t
})

// convertF16ToBF16 writes src's little-endian binary16 values into dst as
// bfloat16, splitting the work over up to threads goroutines.
func convertF16ToBF16(dst, src []byte, threads int) {
	const chunk = 1 << 20 // bytes per job (a multiple of 8): large enough to amortise a goroutine
	n := (len(src) + chunk - 1) / chunk
	threads = max(1, min(threads, n))
	var wg sync.WaitGroup
	for w := range threads {
		wg.Go(func() {
			for c := w; c < n; c += threads {
				lo, hi := c*chunk, min(len(src), (c+1)*chunk)
				convertChunk(dst[lo:hi], src[lo:hi])
			}
		})
	}
	wg.Wait()
}

// convertChunk converts four values per 8-byte word (three times the
// speed of one at a time: the table lookups overlap), then the tail.
func convertChunk(dst, src []byte) {
	tab := f16ToBF16Table()
	i := 0
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		y := uint64(tab[uint16(x)]) | uint64(tab[uint16(x>>16)])<<16 | uint64(tab[uint16(x>>32)])<<32 | uint64(tab[uint16(x>>48)])<<48
		binary.LittleEndian.PutUint64(dst[i:], y)
	}
	for ; i+1 < len(src); i += 2 {
		binary.LittleEndian.PutUint16(dst[i:], tab[binary.LittleEndian.Uint16(src[i:])])
	}
}

// bindBF16 gives weight v the BF16 conversion of its F16 bytes raw, in
// huge pages (decode streams it: see "Huge pages behind streamed weights";
// the Go heap would also fault it in 4 KiB at a time), and lets w drop
// raw's pages when it can.
func (p *Program) bindBF16(v *value, w WeightSource, t *gguf.TensorInfo, raw []byte) error {
	buf, free, err := hugepage.Alloc(len(raw))
	if err != nil {
		return fmt.Errorf("weight %q as BF16: %w", v.node.Tensor, err)
	}
	p.held.add(free)
	convertF16ToBF16(buf, raw, p.threads)
	v.raw = buf
	p.bf16Weights++
	p.bf16Bytes += int64(len(raw))
	if r, ok := w.(releaser); ok {
		r.ReleaseTensorData(t)
	}
	return nil
}

// heldMemory frees the memory a Program allocated outside the Go heap
// (converted weights): at Close, or when the Program is collected.
type heldMemory struct {
	mu    sync.Mutex
	frees []func() error
}

func (h *heldMemory) add(free func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.frees = append(h.frees, free)
}

// release frees everything once; later calls do nothing.
func (h *heldMemory) release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, f := range h.frees {
		errs = append(errs, f())
	}
	h.frees = nil
	return errors.Join(errs...)
}

// Close frees the weights converted at load (Options.F16AsBF16); the
// program and its States must not run afterwards (runtime.Model.Close
// calls it once no batch runs). A program that converted nothing holds
// nothing to free, and one never closed frees them when collected.
func (p *Program) Close() error { return p.held.release() }

// BF16Weights reports how many F16 weights were converted to BF16 at load
// (Options.F16AsBF16) and their size in bytes (the same in either type).
func (p *Program) BF16Weights() (n int, bytes int64) { return p.bf16Weights, p.bf16Bytes }
