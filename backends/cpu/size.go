package cpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weft-ml/weft/internal/safemath"
	"github.com/weft-ml/weft/internal/sysmem"
)

// StateSize is the memory one State needs, by part, in bytes.
type StateSize struct {
	Ctx         int   // KV cache positions
	KV          int64 // K and V caches of every attention layer
	KVPerPos    int64 // KV bytes per position (all layers, K and V)
	Attention   int64 // per-thread attention scratch: score rows as long as the context
	Activations int64 // the activation arena, quantized activations and tile scratch (sized by the batch)
	Batch       int   // the largest batch the activations are sized for

	group, headDim int // attention scratch geometry, for NewState
}

// Total is the sum of the parts (they are each checked, and so is the sum).
func (z StateSize) Total() int64 { return z.KV + z.Attention + z.Activations }

// StateBytes works out, without allocating, the memory NewState(ctx,
// kvType) would allocate. It fails when ctx is out of range or a size
// overflows.
func (p *Program) StateBytes(ctx int, kvType KVType) (StateSize, error) {
	return p.stateBytes(ctx, 1, kvType, false)
}

// stateBytes is StateBytes for seqs sequences of ctx positions each, with
// flash attention's layout and scratch when flash is set (its caches
// hold ctx rows of the type's real bytes, Q8_0 and Q4_0 blocks included).
func (p *Program) stateBytes(ctx, seqs int, kvType KVType, flash bool) (StateSize, error) {
	z := StateSize{Ctx: ctx, Batch: p.maxTokens, group: 1}
	if ctx <= 0 || ctx > MaxContext {
		return z, fmt.Errorf("context of %d tokens: want 1 to %d (--ctx)", ctx, MaxContext)
	}
	elem := int64(2)
	if kvType == KVF32 {
		elem = 4
	}
	var c safemath.Calc
	padded := int64(padKV(ctx))
	for _, id := range p.attention {
		a := p.g.Nodes[id].Attrs
		kvHeads, hd := a.Int("kv_heads"), a.Int("head_dim") // bounded by checkGraph
		width := c.Mul(int64(kvHeads), int64(hd))
		if flash {
			if err := checkFlash(kvType, hd); err != nil {
				return z, err
			}
			// K: flashKCells rows, V: ctx rows (newFlashKVCache).
			row := int64(kvRowBytes(kvType, int(width)))
			z.KVPerPos = c.Add(z.KVPerPos, c.Mul(row, 2))
			rows := int64(flashKCells(ctx, kvType) + ctx)
			z.KV = c.Add(z.KV, c.Mul(c.Mul(row, rows), int64(seqs)))
		} else {
			z.KVPerPos = c.Add(z.KVPerPos, c.Mul(c.Mul(width, elem), 2))
			// K: padded rows; V: width rows of padded positions (newKVCache).
			z.KV = c.Add(z.KV, c.Mul(c.Mul(c.Mul(width, elem), c.Mul(padded, 2)), int64(seqs)))
		}
		z.headDim = max(z.headDim, hd)
		z.group = max(z.group, a.Int("heads")/kvHeads)
	}
	// newAttnBufs: per thread q16, qTail, scores, p16 and out for
	// attnRowsCap query rows and a vBlk.
	g, hd := int64(attnRowsCap(z.group)), int64(z.headDim)
	perThread := c.Add(c.Add(c.Mul(6, c.Mul(g, hd)), c.Mul(4, hd)), c.Mul(6, c.Mul(g, padded)))
	if flash {
		perThread = flashBufBytes(z.group*flashTokens, z.headDim)
	}
	z.Attention = c.Mul(perThread, int64(max(p.threads, 1)))
	if !flash {
		z.Attention = c.Add(z.Attention, c.Mul(vBlockBytes, int64(max(p.threads, 1)))) // each worker's V-store block
	}
	tiles := c.Mul(p.tileBytes, int64(p.threads))
	z.Activations = c.Add(c.Add(p.ActivationBytes(), int64(p.actBytes)), tiles)
	total := c.Add(c.Add(z.KV, z.Attention), z.Activations)
	if c.Overflow() {
		return z, fmt.Errorf("a session with a context of %d tokens needs more memory than can be counted: use a smaller context (--ctx)", ctx)
	}
	for _, n := range []int64{z.KV, z.Attention, total} {
		if _, ok := safemath.Int(n); !ok {
			return z, fmt.Errorf("a session with a context of %d tokens needs %s, more than this platform can address: use a smaller context (--ctx)", ctx, safemath.Bytes(total))
		}
	}
	return z, nil
}

// checkFits checks z, for kvType, against the memory the machine has
// available now (internal/sysmem), saying what to change when it does not
// fit.
func (p *Program) checkFits(z StateSize, kvType KVType, flash bool) error {
	m, ok := sysmem.Available()
	if !ok || z.Total() <= m.Bytes {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "a session with a context of %d tokens needs %s of memory (KV cache %s, %s per position; attention scratch %s; activations %s for batches of %d tokens) but %s is available (%s): ",
		z.Ctx, safemath.Bytes(z.Total()), safemath.Bytes(z.KV), safemath.Bytes(z.KVPerPos), safemath.Bytes(z.Attention), safemath.Bytes(z.Activations), z.Batch, safemath.Bytes(m.Bytes), m.Source)
	// The largest context that fits now: sizes grow with ctx.
	fits := func(ctx int) bool {
		y, err := p.stateBytes(ctx, 1, kvType, flash)
		return err == nil && y.Total() <= m.Bytes
	}
	lo, hi := 0, z.Ctx // fits(lo) or lo == 0; !fits(hi)
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	switch {
	case lo >= 1 && z.KV+z.Attention >= z.Activations:
		fmt.Fprintf(&b, "use a smaller context (--ctx %d fits now)", lo)
	case lo >= 1:
		fmt.Fprintf(&b, "recompile with a smaller batch (graphc compile --batch) or use a smaller context (--ctx %d fits now)", lo)
	default:
		b.WriteString("recompile with a smaller batch (graphc compile --batch); even a context of 1 token does not fit")
	}
	return errors.New(b.String())
}
