package ref

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/weft-ml/weft/gguf"
)

// MatMul computes dst[t·rows+r] = W[r,:]·x[t,:] for a weight matrix W of
// rows×cols elements of type wt (rows stored one after another, as in GGUF)
// and nTok activation rows x[t,:] of cols float32 values.
//
// As in llama.cpp, the activations are first converted to the weight type's
// dot-product type: kept as float32 for F32 weights, rounded to binary16
// for F16 and to bfloat16 for BF16, quantized to Q8_0, Q8_1 or Q8_K for the
// block formats. Float types use ggml's summation order (see dot.go);
// quantized types use package quant's dot products. scratch must hold
// ActScratchBytes(wt, cols, nTok) bytes, aligned to 4 bytes.
func MatMul(dst []float32, w []byte, wt gguf.TensorType, rows, cols int, x []float32, nTok int, scratch []byte) error {
	if err := checkMatMul(dst, w, wt, rows, cols, x, nTok, scratch); err != nil {
		return err
	}
	if !isFloatType(wt) {
		return quantMatMul(dst, w, wt, rows, cols, x, nTok, scratch)
	}
	act, wrow := floatScratch(wt, cols, nTok, scratch)
	if wt == gguf.TypeF32 {
		act = x[:nTok*cols]
	} else {
		round := roundHalf
		if wt == gguf.TypeBF16 {
			round = roundBF16
		}
		for i, v := range x[:nTok*cols] {
			act[i] = round(v)
		}
	}
	dot := floatDot(wt, cols, nTok)
	rowBytes := cols * int(wt.BlockBytes())
	for r := 0; r < rows; r++ {
		decodeFloatRow(wt, w[r*rowBytes:(r+1)*rowBytes], wrow)
		for t := 0; t < nTok; t++ {
			dst[t*rows+r] = dot(wrow, act[t*cols:(t+1)*cols])
		}
	}
	return nil
}

// ActScratchBytes returns the scratch bytes MatMul needs for nTok rows of
// cols activations against weights of type wt, or 0 when wt or cols is not
// supported (MatMul then reports why).
func ActScratchBytes(wt gguf.TensorType, cols, nTok int) int {
	if cols <= 0 || nTok <= 0 {
		return 0
	}
	switch wt {
	case gguf.TypeF32:
		return 4 * cols
	case gguf.TypeF16, gguf.TypeBF16:
		return 4 * cols * (nTok + 1)
	}
	return quantScratchBytes(wt, cols, nTok)
}

func isFloatType(t gguf.TensorType) bool {
	return t == gguf.TypeF32 || t == gguf.TypeF16 || t == gguf.TypeBF16
}

func checkMatMul(dst []float32, w []byte, wt gguf.TensorType, rows, cols int, x []float32, nTok int, scratch []byte) error {
	if rows <= 0 || cols <= 0 || nTok <= 0 {
		return fmt.Errorf("matmul: bad shape rows=%d cols=%d nTok=%d", rows, cols, nTok)
	}
	rowBytes, err := wt.RowBytes(uint64(cols))
	if err != nil {
		return fmt.Errorf("matmul: %w", err)
	}
	need := ActScratchBytes(wt, cols, nTok)
	switch {
	case need == 0:
		return fmt.Errorf("matmul: weight type %s is not supported", wt)
	case uint64(len(w)) < rowBytes*uint64(rows):
		return fmt.Errorf("matmul: %d×%d %s weights need %d bytes, got %d", rows, cols, wt, rowBytes*uint64(rows), len(w))
	case len(x) < nTok*cols:
		return fmt.Errorf("matmul: %d×%d activations, got %d values", nTok, cols, len(x))
	case len(dst) < nTok*rows:
		return fmt.Errorf("matmul: output needs %d values, got %d", nTok*rows, len(dst))
	case len(scratch) < need:
		return fmt.Errorf("matmul: scratch needs %d bytes, got %d", need, len(scratch))
	case uintptr(unsafe.Pointer(unsafe.SliceData(scratch)))%4 != 0:
		return fmt.Errorf("matmul: scratch is not 4-byte aligned")
	}
	return nil
}

// floatScratch splits scratch into the rounded activations and one decoded
// weight row.
func floatScratch(wt gguf.TensorType, cols, nTok int, scratch []byte) (act, wrow []float32) {
	all := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(scratch))), len(scratch)/4)
	wrow = all[:cols]
	if wt != gguf.TypeF32 {
		act = all[cols : cols+nTok*cols]
	}
	return act, wrow
}

// floatDot picks the kernel of the path llama.cpp takes for this product.
func floatDot(wt gguf.TensorType, cols, nTok int) func(a, b []float32) float32 {
	switch {
	case wt == gguf.TypeBF16 && nTok >= 2 && cols%(2*lanes) == 0:
		return tinyDotBF16
	case wt == gguf.TypeBF16:
		return vecDotBF16
	case nTok >= 2 && cols%lanes == 0:
		return tinyDot
	case wt == gguf.TypeF16:
		return vecDotF16
	}
	return vecDotF32
}

// decodeFloatRow widens one little-endian row of F32, F16 or BF16 values.
func decodeFloatRow(t gguf.TensorType, src []byte, dst []float32) {
	switch t {
	case gguf.TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case gguf.TypeF16:
		for i := range dst {
			dst[i] = halfToFloat(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case gguf.TypeBF16:
		for i := range dst {
			dst[i] = bf16ToFloat(binary.LittleEndian.Uint16(src[2*i:]))
		}
	}
}

// GetRows copies rows ids of the matrix w (rows of cols elements of type wt)
// into dst, widened to float32: the token-embedding lookup. dst must hold
// len(ids)·cols values.
func GetRows(dst []float32, w []byte, wt gguf.TensorType, cols int, ids []int32) error {
	if cols <= 0 {
		return fmt.Errorf("get_rows: bad row length %d", cols)
	}
	rb, err := wt.RowBytes(uint64(cols))
	if err != nil {
		return fmt.Errorf("get_rows: %w", err)
	}
	rowBytes := int(rb)
	nRows := len(w) / rowBytes
	if len(dst) < len(ids)*cols {
		return fmt.Errorf("get_rows: output needs %d values, got %d", len(ids)*cols, len(dst))
	}
	for i, id := range ids {
		if id < 0 || int(id) >= nRows {
			return fmt.Errorf("get_rows: row %d out of range [0, %d)", id, nRows)
		}
		src := w[int(id)*rowBytes : (int(id)+1)*rowBytes]
		out := dst[i*cols : (i+1)*cols]
		if isFloatType(wt) {
			decodeFloatRow(wt, src, out)
		} else if err := dequantRow(wt, src, out); err != nil {
			return fmt.Errorf("get_rows: %w", err)
		}
	}
	return nil
}
