package ref

import (
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// KV is one layer's K or V cache. Row p holds position p's RowLen =
// nKVHeads·headDim values. Exactly one of F16 (binary16 bits, llama.cpp's
// default cache type), F32 and Quant is set, with capacity rows.
type KV struct {
	F16    []uint16
	F32    []float32
	RowLen int
	// Quant holds rows of QType blocks (Q8_0 or Q4_0: llama.cpp's
	// -ctk/-ctv q8_0 and q4_0), QType.RowBytes(RowLen) bytes a row;
	// RowLen is a multiple of 32. Only FlashAttention reads such a cache.
	Quant []byte
	QType gguf.TensorType
}

// Store writes one token's row x (RowLen values) at position pos, rounding
// to binary16 to nearest even for an F16 cache, as ggml_cpy does, and
// quantizing a Q8_0 or Q4_0 row with ggml-cpu's from_float for the type
// (QuantizeRowQ8_0, quantize_row_q4_0).
// Precondition: pos is below the capacity and len(x) >= RowLen.
func (c KV) Store(pos int, x []float32) {
	off := pos * c.RowLen
	switch {
	case c.F16 != nil:
		row := c.F16[off : off+c.RowLen]
		for i := range row {
			row[i] = floatToHalf(x[i])
		}
	case c.Quant != nil:
		rb := c.rowBytes()
		StoreQuantRow(c.QType, x[:c.RowLen], c.Quant[pos*rb:(pos+1)*rb])
	default:
		copy(c.F32[off:off+c.RowLen], x[:c.RowLen])
	}
}

// rowBytes is the size of one quantized row.
func (c KV) rowBytes() int {
	n, _ := c.QType.RowBytes(uint64(c.RowLen))
	return int(n)
}

// StoreQuantRow quantizes x into dst as ggml_cpy does for a Q8_0 or Q4_0
// KV cache on the CPU: Q8_0 with QuantizeRowQ8_0 (ggml-cpu's vector
// quantizer), Q4_0 with quantize_row_q4_0_ref (ggml-cpu's Q4_0 from_float).
// Preconditions: t is Q8_0 or Q4_0, len(x) is a multiple of 32 and dst
// holds t.RowBytes(len(x)) bytes.
func StoreQuantRow(t gguf.TensorType, x []float32, dst []byte) {
	if t == gguf.TypeQ8_0 {
		QuantizeRowQ8_0(x, dst)
		return
	}
	quant.QuantizeRow(t, x, dst)
}

// isF16 reports whether the cache holds binary16 values.
func (c KV) isF16() bool { return c.F16 != nil }
