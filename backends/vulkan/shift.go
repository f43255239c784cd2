//go:build linux && (amd64 || arm64)

package vulkan

import (
	"errors"
	"fmt"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops/ref"
)

// shiftParams is how a context shift rotates one attention layer's keys:
// the rotation of the RoPE node that produced them, or why it cannot.
type shiftParams struct {
	rope ref.RoPE
	err  error
}

// shiftOf resolves the rotation of Attention node n's keys
// (backends.KeyRoPE) at load, with the values of its frequency factors.
// A model whose keys cannot be shifted still loads: ShiftSeq refuses.
func (e *Executable) shiftOf(n *graph.Node, w backends.Weights) shiftParams {
	rn, err := backends.KeyRoPE(e.g, n)
	if err != nil {
		return shiftParams{err: err}
	}
	r, err := e.ropeOf(rn, w)
	if err != nil {
		return shiftParams{err: err}
	}
	r.RoPE.NeoX = rn.Attrs.Bool("neox")
	hd := n.Attrs.Int("head_dim")
	switch {
	case hd%2 != 0:
		err = fmt.Errorf("vulkan: a context shift of heads of %d values (odd) is not implemented", hd)
	case r.NeoX && r.Dims%4 != 0:
		err = fmt.Errorf("vulkan: a context shift of NeoX RoPE over %d dimensions (not a multiple of 4) is not implemented", r.Dims)
	}
	return shiftParams{rope: r.RoPE, err: err}
}

// ShiftSeq is a context shift of sequence seq (backends.KVShifter) on the
// device: kv_shift moves the cells down in blocks of at most discard
// cells, so that no block reads a cell another of its invocations writes,
// with a barrier between blocks; each layer's keys are rotated by the
// cos and sin of its RoPE at −discard positions, computed on the host
// (ref.RoPE.ShiftCosSin) like the RoPE tables.
func (s *Session) ShiftSeq(seq, keep, discard, n int) error {
	if s.e == nil {
		return errors.New("vulkan: ShiftSeq on a closed session")
	}
	if err := backends.CheckShift(seq, keep, discard, n, s.seqs, s.ctx); err != nil {
		return err
	}
	moved := n - keep - discard
	if discard == 0 || moved == 0 || len(s.e.attention) == 0 {
		return nil
	}
	var kernel string
	switch s.kvType {
	case backends.KVF16:
		kernel = "kv_shift_f16" // with or without flash attention: one layout
	case backends.KVF32:
		kernel = "kv_shift_f32"
	default:
		return fmt.Errorf("vulkan: a context shift of a %s KV cache is not implemented (use --kv-type f16)", s.kvType)
	}
	e := s.e
	var table []float32
	offs := make([]int, len(e.attention))
	for i, sp := range e.shifts {
		if sp.err != nil {
			return sp.err
		}
		offs[i] = len(table)
		table = append(table, sp.rope.ShiftCosSin(int32(-discard), make([]float32, sp.rope.Dims))...)
	}
	if len(table) == 0 {
		table = []float32{0}
	}
	tb, err := e.d.Alloc(int64(4 * len(table)))
	if err != nil {
		return err
	}
	defer tb.Free()
	if err := e.d.UploadF32(tb, 0, table); err != nil {
		return err
	}
	p, err := e.d.NewProgram()
	if err != nil {
		return err
	}
	defer p.Close()
	r := &recorder{s: s, p: p}
	for b := 0; b < moved; b += discard {
		count := min(discard, moved-b)
		src0 := seq*s.ctx + keep + discard + b
		for i, id := range e.attention {
			a := e.g.Nodes[id].Attrs
			width, hd := a.Int("kv_heads")*a.Int("head_dim"), a.Int("head_dim")
			rp := e.shifts[i].rope
			push := []uint32{uint32(width), uint32(hd), uint32(rp.Dims / 2), boolWord(rp.NeoX), uint32(src0), uint32(count), uint32(discard), uint32(offs[i])}
			if err := r.dispatch(kernel, strided(count*width/2, 64), push, Whole(tb), Whole(s.kc[i]), Whole(s.vc[i])); err != nil {
				return err
			}
		}
		p.Barrier()
	}
	if err := p.End(); err != nil {
		return err
	}
	return p.Run()
}

var _ backends.KVShifter = (*Session)(nil)
