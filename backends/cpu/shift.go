package cpu

import (
	"fmt"
	"sync"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
)

// ShiftSeq is a context shift of sequence seq (backends.KVShifter): in
// every layer, cells [keep, keep+discard) are dropped and cells
// [keep+discard, n) move down by discard, keys rotated by the layer's
// RoPE by −discard positions (ref.ShiftKV). Every layer's rotation is
// resolved before any cell moves, so a refusal changes nothing. Layers
// are shifted in parallel.
func (s *State) ShiftSeq(seq, keep, discard, n int) error {
	if err := backends.CheckShift(seq, keep, discard, n, s.seqs, s.ctx); err != nil {
		return err
	}
	if s.broken != nil {
		return s.broken
	}
	if discard == 0 || len(s.kv) == 0 {
		return nil
	}
	ropes := make([]ref.RoPE, len(s.kv))
	for i, id := range s.p.attention {
		r, err := s.p.keyRoPE(id)
		if err != nil {
			return err
		}
		if err := s.kv[i][seq].shiftable(); err != nil {
			return err
		}
		ropes[i] = r
	}
	var wg sync.WaitGroup
	next := make(chan int, len(s.kv))
	for i := range s.kv {
		next <- i
	}
	close(next)
	for range min(s.p.threads, len(s.kv)) {
		wg.Go(func() {
			for i := range next {
				s.kv[i][seq].shift(keep, discard, n, ropes[i])
			}
		})
	}
	wg.Wait()
	return nil
}

// keyRoPE is the rotation of Attention node id's keys, with the values of
// its frequency factors.
func (p *Program) keyRoPE(id int) (ref.RoPE, error) {
	rn, err := backends.KeyRoPE(p.g, p.g.Nodes[id])
	if err != nil {
		return ref.RoPE{}, err
	}
	var factors []float32
	if len(rn.Inputs) == 3 {
		factors = p.vals[rn.Inputs[2]].vec
		if factors == nil {
			return ref.RoPE{}, fmt.Errorf("the frequency factors of RoPE %q are not an F32 vector the CPU holds: a context shift cannot rotate its keys", rn.Name)
		}
	}
	return ops.RoPEOf(rn.Attrs, factors), nil
}

// shiftable refuses a cache whose cells ShiftSeq cannot rotate.
func (c *kvCache) shiftable() error {
	if c.flash {
		return fmt.Errorf("a context shift of a flash-attention KV cache is not implemented yet (run without --flash-attn, with --kv-type f16 or f32)")
	}
	if c.k16 == nil && c.k32 == nil {
		return fmt.Errorf("a context shift of this KV cache type is not implemented (use --kv-type f16 or f32)")
	}
	return nil
}

// shift is ref.ShiftKV in this cache's layout: K rows are widened,
// rotated by r's angles of −discard positions and stored again (rounded
// to binary16 for an F16 cache as store does); each transposed V row
// moves its positions down.
func (c *kvCache) shift(keep, discard, n int, r ref.RoPE) {
	w, vs := c.width(), c.vStride
	cs := r.ShiftCosSin(int32(-discard), make([]float32, r.Dims))
	row := make([]float32, w)
	for p := keep + discard; p < n; p++ {
		d := p - discard
		if c.f16 {
			src := c.k16[2*p*w : 2*(p+1)*w]
			for i := range row {
				row[i] = quant.FP16ToFP32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
			}
			r.Rotate(row, c.kvHeads, c.headDim, cs)
			simd.QuantizeRow(gguf.TypeF16)(row, c.k16[2*d*w:2*(d+1)*w])
			continue
		}
		copy(row, c.k32[p*w:(p+1)*w])
		r.Rotate(row, c.kvHeads, c.headDim, cs)
		copy(c.k32[d*w:], row)
	}
	for i := range w {
		base := i * vs
		if c.f16 {
			copy(c.v16[2*(base+keep):], c.v16[2*(base+keep+discard):2*(base+n)])
			continue
		}
		copy(c.v32[base+keep:], c.v32[base+keep+discard:base+n])
	}
}
