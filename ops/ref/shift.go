package ref

// ShiftKV is a context shift of one layer's K and V caches, llama.cpp's
// llama_kv_cache_seq_rm(keep, keep+discard) then seq_add(keep+discard, n,
// −discard): rows [keep, keep+discard) are dropped and rows
// [keep+discard, n) move down by discard to [keep, n−discard). Each moved
// K row is rotated by the RoPE angles of position −discard
// (r.ShiftCosSin), so that it holds the key of its new position: the
// cached values (binary16 widened exactly for an F16 cache) are rotated
// in float32 as Rotate does and rounded back to binary16 to nearest even,
// as ggml's rope of an f16 tensor does. V rows move unchanged, and rows
// below keep are left alone (llama.cpp rotates them by 0, which changes
// no bits). nHeads and headDim describe a row (nHeads·headDim =
// k.RowLen).
//
// Preconditions: 0 <= keep, 0 <= discard, keep+discard <= n, n rows in
// both caches.
func ShiftKV(k, v KV, keep, discard, n int, r RoPE, nHeads, headDim int) {
	if discard == 0 {
		return
	}
	cs := r.ShiftCosSin(int32(-discard), make([]float32, r.Dims))
	row := make([]float32, k.RowLen)
	for p := keep + discard; p < n; p++ {
		k.load(p, row)
		r.Rotate(row, nHeads, headDim, cs)
		k.Store(p-discard, row)
		v.load(p, row)
		v.Store(p-discard, row)
	}
}

// load widens row p into x (RowLen values).
func (c KV) load(p int, x []float32) {
	off := p * c.RowLen
	if c.F16 != nil {
		for i, h := range c.F16[off : off+c.RowLen] {
			x[i] = halfToFloat(h)
		}
		return
	}
	copy(x, c.F32[off:off+c.RowLen])
}
