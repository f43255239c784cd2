package ref

import (
	"fmt"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// quantScratchBytes is the size of nTok activation rows converted to the
// dot-product type of block-quantized weights wt, or 0 if unsupported
// (types without a dot product are caught by quant.CheckVecDot in MatMul).
func quantScratchBytes(wt gguf.TensorType, cols, nTok int) int {
	vt := quant.VecDotType(wt)
	if isFloatType(vt) || !quant.Supported(wt) {
		return 0
	}
	rb, err := vt.RowBytes(uint64(cols))
	if err != nil {
		return 0
	}
	return int(rb) * nTok
}

// quantMatMul quantizes each activation row once, then takes package quant's
// dot product of every weight row with it.
func quantMatMul(dst []float32, w []byte, wt gguf.TensorType, rows, cols int, x []float32, nTok int, scratch []byte) error {
	vt := quant.VecDotType(wt)
	wb, _ := wt.RowBytes(uint64(cols))
	ab, _ := vt.RowBytes(uint64(cols))
	wRow, aRow := int(wb), int(ab)
	if err := quant.CheckVecDot(wt, cols, w[:wRow], scratch[:aRow]); err != nil {
		return fmt.Errorf("matmul: %w", err)
	}
	for t := 0; t < nTok; t++ {
		quant.QuantizeRow(vt, x[t*cols:(t+1)*cols], scratch[t*aRow:(t+1)*aRow])
	}
	for r := 0; r < rows; r++ {
		wr := w[r*wRow : (r+1)*wRow]
		for t := 0; t < nTok; t++ {
			dst[t*rows+r] = quant.VecDot(wt, cols, wr, scratch[t*aRow:(t+1)*aRow])
		}
	}
	return nil
}

// dequantRow widens one row of a block-quantized type.
func dequantRow(t gguf.TensorType, src []byte, dst []float32) error {
	return quant.Dequantize(t, src, dst)
}
