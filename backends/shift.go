package backends

import (
	"fmt"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// KVShifter is an optional State capability: a context shift of one
// sequence's KV cells, as llama.cpp makes room when the context fills
// (seq_rm then seq_add). ShiftSeq drops cells [keep, keep+discard) of
// sequence seq in every layer and moves cells [keep+discard, n) down by
// discard; each moved key is rotated by its layer's RoPE by the position
// delta −discard (ref.ShiftKV). The cells from n−discard on are left
// stale: they lie beyond the sequence and are written before they are
// read again. A State whose keys it cannot rotate (no RoPE found on the
// keys, a KV cache type it cannot shift) returns an error and changes
// nothing.
type KVShifter interface {
	ShiftSeq(seq, keep, discard, n int) error
}

// CheckShift validates ShiftSeq's arguments for a State of seqs sequences
// of ctx positions.
func CheckShift(seq, keep, discard, n, seqs, ctx int) error {
	switch {
	case seq < 0 || seq >= seqs:
		return fmt.Errorf("context shift of sequence %d: the State has %d", seq, seqs)
	case keep < 0 || discard < 0 || keep+discard > n || n > ctx:
		return fmt.Errorf("context shift keeping %d and discarding %d of %d cells: want 0 <= keep, 0 <= discard, keep+discard <= cells <= %d", keep, discard, n, ctx)
	}
	return nil
}

// KeyRoPE returns the RoPE node that rotates the keys of Attention node a
// (its second operand, looking through Copy nodes), or an error saying
// why a context shift cannot rotate them. Every backend resolves a
// layer's rotation through it, so they shift the same way.
func KeyRoPE(g *graph.Graph, a *graph.Node) (*graph.Node, error) {
	if a.Op != ops.Attention || len(a.Inputs) < 2 {
		return nil, fmt.Errorf("node %q is not an Attention node", a.Name)
	}
	k := g.Nodes[a.Inputs[1]]
	for k.Op == ops.Copy {
		k = g.Nodes[k.Inputs[0]]
	}
	if k.Op != ops.RoPE {
		return nil, fmt.Errorf("the keys of %q come from %s %q, not from a RoPE: a context shift cannot move them to new positions", a.Name, k.Op, k.Name)
	}
	if k.Attrs.Int("head_dim") != a.Attrs.Int("head_dim") || k.Attrs.Int("heads") != a.Attrs.Int("kv_heads") {
		return nil, fmt.Errorf("the RoPE %q of %q's keys rotates %d heads of %d, the cache holds %d of %d", k.Name, a.Name,
			k.Attrs.Int("heads"), k.Attrs.Int("head_dim"), a.Attrs.Int("kv_heads"), a.Attrs.Int("head_dim"))
	}
	return k, nil
}
