package gguf

import (
	"fmt"
	"math/bits"
	"strings"
)

// TensorType is a ggml tensor element type id as stored in GGUF tensor infos.
type TensorType uint32

// Tensor types, numbered as ggml numbers them. Gaps are ids ggml retired.
const (
	TypeF32     TensorType = 0
	TypeF16     TensorType = 1
	TypeQ4_0    TensorType = 2
	TypeQ4_1    TensorType = 3
	TypeQ5_0    TensorType = 6
	TypeQ5_1    TensorType = 7
	TypeQ8_0    TensorType = 8
	TypeQ8_1    TensorType = 9
	TypeQ2_K    TensorType = 10
	TypeQ3_K    TensorType = 11
	TypeQ4_K    TensorType = 12
	TypeQ5_K    TensorType = 13
	TypeQ6_K    TensorType = 14
	TypeQ8_K    TensorType = 15
	TypeIQ2_XXS TensorType = 16
	TypeIQ2_XS  TensorType = 17
	TypeIQ3_XXS TensorType = 18
	TypeIQ1_S   TensorType = 19
	TypeIQ4_NL  TensorType = 20
	TypeIQ3_S   TensorType = 21
	TypeIQ2_S   TensorType = 22
	TypeIQ4_XS  TensorType = 23
	TypeI8      TensorType = 24
	TypeI16     TensorType = 25
	TypeI32     TensorType = 26
	TypeI64     TensorType = 27
	TypeF64     TensorType = 28
	TypeIQ1_M   TensorType = 29
	TypeBF16    TensorType = 30
	TypeTQ1_0   TensorType = 34
	TypeTQ2_0   TensorType = 35
	TypeMXFP4   TensorType = 39
)

// typeInfo describes the block layout of one tensor type: BlockSize elements
// are stored in BlockBytes bytes.
type typeInfo struct {
	name       string
	blockSize  uint64
	blockBytes uint64
}

var typeTable = map[TensorType]typeInfo{
	TypeF32:     {"F32", 1, 4},
	TypeF16:     {"F16", 1, 2},
	TypeQ4_0:    {"Q4_0", 32, 18},
	TypeQ4_1:    {"Q4_1", 32, 20},
	TypeQ5_0:    {"Q5_0", 32, 22},
	TypeQ5_1:    {"Q5_1", 32, 24},
	TypeQ8_0:    {"Q8_0", 32, 34},
	TypeQ8_1:    {"Q8_1", 32, 36},
	TypeQ2_K:    {"Q2_K", 256, 84},
	TypeQ3_K:    {"Q3_K", 256, 110},
	TypeQ4_K:    {"Q4_K", 256, 144},
	TypeQ5_K:    {"Q5_K", 256, 176},
	TypeQ6_K:    {"Q6_K", 256, 210},
	TypeQ8_K:    {"Q8_K", 256, 292},
	TypeIQ2_XXS: {"IQ2_XXS", 256, 66},
	TypeIQ2_XS:  {"IQ2_XS", 256, 74},
	TypeIQ3_XXS: {"IQ3_XXS", 256, 98},
	TypeIQ1_S:   {"IQ1_S", 256, 50},
	TypeIQ4_NL:  {"IQ4_NL", 32, 18},
	TypeIQ3_S:   {"IQ3_S", 256, 110},
	TypeIQ2_S:   {"IQ2_S", 256, 82},
	TypeIQ4_XS:  {"IQ4_XS", 256, 136},
	TypeI8:      {"I8", 1, 1},
	TypeI16:     {"I16", 1, 2},
	TypeI32:     {"I32", 1, 4},
	TypeI64:     {"I64", 1, 8},
	TypeF64:     {"F64", 1, 8},
	TypeIQ1_M:   {"IQ1_M", 256, 56},
	TypeBF16:    {"BF16", 1, 2},
	TypeTQ1_0:   {"TQ1_0", 256, 54},
	TypeTQ2_0:   {"TQ2_0", 256, 66},
	TypeMXFP4:   {"MXFP4", 32, 17},
}

// Known reports whether t is a tensor type id this package understands.
func (t TensorType) Known() bool { _, ok := typeTable[t]; return ok }

// String returns llama.cpp's name for the type, e.g. "Q4_K".
func (t TensorType) String() string {
	if ti, ok := typeTable[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block (1 for plain types).
func (t TensorType) BlockSize() uint64 { return typeTable[t].blockSize }

// BlockBytes is the number of bytes one block occupies.
func (t TensorType) BlockBytes() uint64 { return typeTable[t].blockBytes }

// RowBytes returns the bytes needed for n elements of type t. It fails when n
// is not a whole number of blocks or the type is unknown.
func (t TensorType) RowBytes(n uint64) (uint64, error) {
	ti, ok := typeTable[t]
	if !ok {
		return 0, fmt.Errorf("unknown tensor type id %d", uint32(t))
	}
	if n%ti.blockSize != 0 {
		return 0, fmt.Errorf("%d elements is not a multiple of the %s block size %d", n, ti.name, ti.blockSize)
	}
	return (n / ti.blockSize) * ti.blockBytes, nil
}

// ParseTensorType maps a name such as "q4_k" or "Q8_0" to its type.
func ParseTensorType(name string) (TensorType, error) {
	up := strings.ToUpper(name)
	for t, ti := range typeTable {
		if ti.name == up {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q", name)
}

// TensorBytes returns the byte size of a tensor of type t with the given
// dimensions (innermost first), checking for overflow and block alignment.
func TensorBytes(t TensorType, dims []uint64) (uint64, error) {
	if len(dims) == 0 {
		return 0, fmt.Errorf("tensor has no dimensions")
	}
	if _, err := NumElements(dims); err != nil {
		return 0, err
	}
	row, err := t.RowBytes(dims[0])
	if err != nil {
		return 0, err
	}
	total := row
	for _, d := range dims[1:] {
		hi, lo := bits.Mul64(total, d)
		if hi != 0 || lo > maxTensorBytes {
			return 0, fmt.Errorf("tensor size overflows: dims %v", dims)
		}
		total = lo
	}
	return total, nil
}

// maxTensorBytes bounds element counts and byte sizes so that every size fits
// an int64 and an int with room to spare.
const maxTensorBytes = 1 << 62

// NumElements multiplies dims, failing on overflow.
func NumElements(dims []uint64) (uint64, error) {
	n := uint64(1)
	for _, d := range dims {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > maxTensorBytes {
			return 0, fmt.Errorf("element count overflows: dims %v", dims)
		}
		n = lo
	}
	return n, nil
}
