//go:build linux && (amd64 || arm64)

package vulkan

import (
	"strconv"

	"github.com/weft-ml/weft/ops"
)

// A decode step's matvec can absorb the node after it (shaders/tail.glsl):
// its last workgroup to finish sees the whole output vector and does that
// node's work, so the node needs no dispatch and no barrier of its own.
// Every dispatch and barrier costs about 5 µs on the H100 whatever it
// does, and a decode step of the llama shape spent 45 of them on
// RMSNorm·w (9.5 µs each) and 22 on quantizing the SwiGLU output.
//
//   - A residual matmul (MatMulAdd) absorbs the RMSNorm·w that reads it:
//     matvec_add_norm_*, the norm's f32 output and its matmuls'
//     activations (fusedNormQuant's kind) written by the tail.
//   - A gate·up matmul absorbs the quantization of its output for the
//     matmul after it: matvec_gateup_quant_*.
//
// The tail gives the bits of the dispatches it replaces (norm.glsl's
// fixed sum order; quantization is order-free), which
// TestFusedDispatchesBitIdentical checks. Only one-token steps with the
// weights in one buffer take it: the tail sees one token's vector, and
// every workgroup of the dispatch must count on the one counter.

// tailKinds numbers the tail's activation kinds (tail.glsl's TAIL_KIND).
var tailKinds = map[string]int{"": 0, "f32": 0, "q8_0": 1, "q8_1": 2, "q8_k": 3, "f16": 4, "bf16": 5}

// A tail is the node a matvec absorbs and what its tail writes.
type tail struct {
	norm *value // the RMSNorm·w absorbed, or nil (quantization only)
	kind string // the activations written to the scratch ("": none)
}

// recorded reports whether node id is recorded as a dispatch of its own
// (not another backend's, not an input, not deferred to its Attention).
func (r *recorder) recorded(id int) bool {
	v := &r.s.e.vals[id]
	return v.active && !v.import_ && !r.s.e.deferred[id]
}

// next returns the node recorded after the current one, or nil.
func (r *recorder) next() *value {
	for _, id := range r.rest {
		if r.recorded(id) {
			return &r.s.e.vals[id]
		}
	}
	return nil
}

// normTail returns the RMSNorm·w that residual matmul v's tail can
// compute: the next node, a norm of v's one row as a whole.
func (r *recorder) normTail(v *value) *tail {
	nx := r.next()
	if !r.s.e.tails || nx == nil || nx.n.Op != ops.RMSNormMul || nx.n.Inputs[0] != v.n.ID ||
		r.rows(nx) != 1 || nx.width != v.width || ops.NormGroup(nx.n.Attrs, nx.width) != nx.width {
		return nil
	}
	return &tail{norm: nx, kind: r.s.e.normQuant[nx.n.ID]}
}

// quantTail returns the tail of gate·up matmul v when the next node is a
// matmul whose activations are v's output, quantized or rounded.
func (r *recorder) quantTail(v *value) *tail {
	nx := r.next()
	if !r.s.e.tails || nx == nil || nx.n.Inputs[0] != v.n.ID {
		return nil
	}
	ws := ops.MatMulWeights(nx.n)
	if len(ws) == 0 {
		return nil
	}
	kind := actKind(r.s.e.g.Nodes[ws[0]].Type.DType)
	block := map[string]int{"q8_0": 32, "q8_1": 32, "q8_k": 256, "f16": 1, "bf16": 1}[kind]
	if block == 0 || v.width%block != 0 {
		return nil
	}
	return &tail{kind: kind}
}

// tailDispatch records matmul v as tail variant name: push holds the
// matvec's seven words, bufs its weight, activations, output and residual
// or up weight; the tail's words and buffers follow.
func (r *recorder) tailDispatch(v *value, t *tail, name string, groups [3]uint32, push []uint32, bufs ...Range) error {
	var eps, woff, ndoff uint32
	if t.norm != nil {
		w, wo := r.operand(t.norm.n.Inputs[1])
		nd, no := r.operand(t.norm.n.ID)
		eps, woff, ndoff = f32bits(t.norm.n.Attrs.Float("eps")), wo, no
		bufs = append(bufs, w, nd)
		r.absorbed[t.norm.n.ID] = true
	}
	bufs = append(bufs, Whole(r.s.scratch))
	push = append(push, uint32(r.s.e.q8Words), eps, woff, ndoff, 0)
	wt := r.s.e.g.Nodes[ops.MatMulWeights(v.n)[0]].Type.DType
	if err := r.dispatch(name+"#1#"+strconv.Itoa(tailKinds[t.kind]), groups, push, r.s.e.withGrid(wt, bufs...)...); err != nil {
		return err
	}
	if t.kind != "" {
		id := v.n.ID
		if t.norm != nil {
			id = t.norm.n.ID
		}
		r.scratch, r.scratchKind = id, t.kind
	}
	return nil
}
