package ref

// KV is one layer's K or V cache. Row p holds position p's RowLen =
// nKVHeads·headDim values. Exactly one of F16 (binary16 bits, llama.cpp's
// default cache type) and F32 is set, with capacity·RowLen elements.
type KV struct {
	F16    []uint16
	F32    []float32
	RowLen int
}

// Store writes one token's row x (RowLen values) at position pos, rounding
// to binary16 to nearest even for an F16 cache, as ggml_cpy does.
// Precondition: pos is below the capacity and len(x) >= RowLen.
func (c KV) Store(pos int, x []float32) {
	off := pos * c.RowLen
	if c.F16 != nil {
		row := c.F16[off : off+c.RowLen]
		for i := range row {
			row[i] = floatToHalf(x[i])
		}
		return
	}
	copy(c.F32[off:off+c.RowLen], x[:c.RowLen])
}

// isF16 reports whether the cache holds binary16 values.
func (c KV) isF16() bool { return c.F16 != nil }
