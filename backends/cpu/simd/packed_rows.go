package simd

import (
	"encoding/binary"
	"fmt"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// PackedGetRows widens rows ids of a rows × cols Q4_0 or Q8_0 table kept
// in its packed layout (see packed.go) into dst, len(ids)·cols values, bit
// for bit as ref.GetRows widens the GGUF rows: each value is its integer
// quant times the block's scale, one exact float32 product. It lets a
// tied embedding (the token table that is also the output projection) be
// repacked for the output matmul and still serve the lookups.
func PackedGetRows(t gguf.TensorType, w []byte, rows, cols int, ids []int32, dst []float32) error {
	if t != gguf.TypeQ4_0 && t != gguf.TypeQ8_0 {
		return fmt.Errorf("get_rows: no packed lookup for %s", t)
	}
	size, err := PackedSize(t, rows, cols)
	if err != nil {
		return fmt.Errorf("get_rows: %w", err)
	}
	if len(w) < size || len(dst) < len(ids)*cols {
		return fmt.Errorf("get_rows: %d packed bytes for %d × %d %s (need %d), output %d for %d rows", len(w), rows, cols, t, size, len(dst), len(ids))
	}
	nb, gb := cols/32, groupBytes(t)
	for i, id := range ids {
		if id < 0 || int(id) >= rows {
			return fmt.Errorf("get_rows: row %d out of range [0, %d)", id, rows)
		}
		group := w[PackedRowOffset(t, int(id), cols):]
		lane := int(id) % PackRows
		out := dst[i*cols : (i+1)*cols]
		for b := 0; b < nb; b++ {
			blk := group[b*gb : (b+1)*gb]
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[2*lane:]))
			unpackBlock(t, blk[2*PackRows:], lane, d, out[32*b:32*b+32])
		}
	}
	return nil
}

// unpackBlock widens lane's 32 quants of one group-block (words of 64
// bytes, bytes 4·lane… of word j holding quant bytes 4j…4j+3).
func unpackBlock(t gguf.TensorType, words []byte, lane int, d float32, out []float32) {
	if t == gguf.TypeQ8_0 {
		for j := 0; j < 8; j++ {
			for k, q := range words[64*j+4*lane : 64*j+4*lane+4] {
				out[4*j+k] = float32(int32(q)-128) * d
			}
		}
		return
	}
	for j := 0; j < 4; j++ { // Q4_0: element i low nibble, i+16 high
		for k, q := range words[64*j+4*lane : 64*j+4*lane+4] {
			out[4*j+k] = float32(int32(q&15)-8) * d
			out[4*j+k+16] = float32(int32(q>>4)-8) * d
		}
	}
}
