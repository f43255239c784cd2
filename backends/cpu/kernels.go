package cpu

import (
	"fmt"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
)

// kernel computes one node into its slot.
type kernel func(s *State, v *value) error

var kernels = map[string]kernel{
	ops.GetRows:    runGetRows,
	ops.SelectRows: runSelectRows,
	ops.RMSNorm:    runRMSNorm,
	ops.LayerNorm:  runLayerNorm,
	ops.Softmax:    runSoftmax,
	ops.Mul:        binaryOp(simd.Mul),
	ops.Add:        binaryOp(simd.Add),
	ops.Scale:      runScale,
	ops.SiLU:       perRow(simd.SiLU),
	ops.GELU:       unary(simd.GELU),
	ops.SoftCap:    runSoftCap,
	ops.SwiGLU:     perRow2(simd.SwiGLU),
	ops.MatMul:     runMatMul,
	ops.RoPE:       runRoPE,
	ops.Attention:  runAttention,
}

func unary(fn func(dst, x []float32)) kernel {
	return func(s *State, v *value) error {
		fn(s.f32(v), s.f32(s.input(v, 0)))
		return nil
	}
}

// perRow applies fn to one row at a time, as ggml does: SiLU's vector
// groups of 16 start afresh on every row.
func perRow(fn func(dst, x []float32)) kernel {
	return func(s *State, v *value) error {
		dst, x, n := s.f32(v), s.f32(s.input(v, 0)), v.width
		for r := 0; r+n <= len(x); r += n {
			fn(dst[r:r+n], x[r:r+n])
		}
		return nil
	}
}

// perRow2 is perRow for a function of two same-shaped operands.
func perRow2(fn func(dst, a, b []float32)) kernel {
	return func(s *State, v *value) error {
		dst, a, b, n := s.f32(v), s.f32(s.input(v, 0)), s.f32(s.input(v, 1)), v.width
		for r := 0; r+n <= len(a); r += n {
			fn(dst[r:r+n], a[r:r+n], b[r:r+n])
		}
		return nil
	}
}

func binaryOp(fn func(dst, a, b []float32)) kernel {
	return func(s *State, v *value) error {
		fn(s.f32(v), s.f32(s.input(v, 0)), s.f32(s.input(v, 1)))
		return nil
	}
}

func runScale(s *State, v *value) error {
	ref.Scale(s.f32(v), s.f32(s.input(v, 0)), v.node.Attrs.Float("scale"))
	return nil
}

func runRMSNorm(s *State, v *value) error {
	ref.RMSNorm(s.f32(v), s.f32(s.input(v, 0)), ops.NormGroup(v.node.Attrs, v.width), v.node.Attrs.Float("eps"))
	return nil
}

func runLayerNorm(s *State, v *value) error {
	ref.LayerNorm(s.f32(v), s.f32(s.input(v, 0)), v.width, v.node.Attrs.Float("eps"))
	return nil
}

func runSoftmax(s *State, v *value) error {
	dst := s.f32(v)
	copy(dst, s.f32(s.input(v, 0)))
	for r := 0; r < len(dst); r += v.width {
		simd.SoftmaxRow(dst[r:r+v.width], v.node.Attrs.Float("scale"))
	}
	return nil
}

func runGetRows(s *State, v *value) error {
	table := s.input(v, 0)
	ids := s.ints[v.node.Inputs[1]]
	vocab := int(table.node.Type.Shape[0].N)
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("token id %d at batch index %d is outside the vocabulary of %d", id, i, vocab)
		}
	}
	if table.pack {
		return simd.PackedGetRows(table.node.Type.DType, table.raw, vocab, v.width, ids, s.f32(v))
	}
	return ref.GetRows(s.f32(v), table.raw, table.node.Type.DType, v.width, ids)
}

func runSelectRows(s *State, v *value) error {
	in := s.input(v, 0)
	src, dst, n := s.f32(in), s.f32(v), s.rows(in)
	for i, r := range s.ints[v.node.Inputs[1]] {
		if r < 0 || int(r) >= n {
			return fmt.Errorf("row %d at index %d is outside the %d rows of its input", r, i, n)
		}
		copy(dst[i*v.width:(i+1)*v.width], src[int(r)*v.width:(int(r)+1)*v.width])
	}
	return nil
}

// matmulTile is how many weight rows one work item covers: small enough
// that the tile stays in cache while every token of the batch uses it.
const matmulTile = 32

// runMatMul quantizes each activation row once to the weight's dot-product
// type, then hands tiles of weight rows to the threads (see matmulPart).
func runMatMul(s *State, v *value) error {
	parts, err := s.quantizeParts(v, []int{v.node.Inputs[1]})
	if err != nil {
		return err
	}
	m, nTok, dst := &parts[0], s.rows(s.input(v, 0)), s.f32(v)
	s.jobs.tiles = tilesJob{m: m, nTok: nTok, dst: dst}
	parallelTiles(m.tiles(), s.p.threads, &s.jobs.tiles)
	return nil
}

// runAttention appends the batch's K and V to its sequences' caches,
// then attends (see attnJob.attend).
func runAttention(s *State, v *value) error {
	a := v.node.Attrs
	sh := attnShape{heads: a.Int("heads"), kvHeads: a.Int("kv_heads"), headDim: a.Int("head_dim"), scale: a.Float("scale"), window: a.Int("window"), softCap: a.Float("softcap")}
	caches := s.kv[v.kv]
	if err := sh.check(caches[0]); err != nil {
		return err
	}
	k, vv := s.f32(s.input(v, 1)), s.f32(s.input(v, 2))
	width := caches[0].width()
	for _, seg := range s.segs {
		s.jobs.store = storeJob{c: caches[seg.Seq], pos: seg.Pos, n: seg.N, k: k[seg.Start*width:], v: vv[seg.Start*width:], bufs: s.attnScratch}
		s.jobs.store.store(len(s.attnScratch))
	}
	s.attnJob = attnJob{caches: caches, seqs: s.batch.Seqs, pos: s.batch.Positions, out: s.f32(v), q: s.f32(s.input(v, 0)), nTok: s.rowsT, sh: sh, bufs: s.attnScratch}
	s.attnJob.attend()
	return nil
}

// runSoftCap is Gemma 2's final logit soft-capping, element by element
// (ref.SoftCap: ggml's float32 steps).
func runSoftCap(s *State, v *value) error {
	ref.SoftCapRow(s.f32(v), s.f32(s.input(v, 0)), v.node.Attrs.Float("cap"))
	return nil
}
