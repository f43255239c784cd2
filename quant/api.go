package quant

import (
	"errors"
	"fmt"

	"github.com/weft-ml/weft/gguf"
)

// ErrUnsupported is wrapped by every error about a tensor type this package
// cannot convert.
var ErrUnsupported = errors.New("unsupported tensor type")

// UnsupportedError reports that tensor tensorName has type t, which this
// package cannot convert. An empty name leaves the tensor out of the message.
func UnsupportedError(tensorName string, t gguf.TensorType) error {
	if tensorName == "" {
		return fmt.Errorf("%w %s", ErrUnsupported, t)
	}
	return fmt.Errorf("tensor %q: %w %s", tensorName, ErrUnsupported, t)
}

// format binds one block type to its row converters. Each function receives
// buffers already checked to hold a whole number of blocks.
type format struct {
	dequant func(src []byte, dst []float32)
	quant   func(src []float32, dst []byte)
	dot     func(n int, w, a []byte) float32
}

var formats = map[gguf.TensorType]format{
	gguf.TypeF32:  {dequantF32, quantF32, dotF32},
	gguf.TypeF16:  {FP16ToFP32Row, FP32ToFP16Row, dotF16},
	gguf.TypeBF16: {BF16ToFP32Row, FP32ToBF16Row, dotBF16},
	gguf.TypeQ4_0: {dequantQ4_0, quantQ4_0, dotQ4_0},
	gguf.TypeQ4_1: {dequantQ4_1, quantQ4_1, dotQ4_1},
	gguf.TypeQ5_0: {dequantQ5_0, quantQ5_0, dotQ5_0},
	gguf.TypeQ5_1: {dequantQ5_1, quantQ5_1, dotQ5_1},
	gguf.TypeQ8_0: {dequantQ8_0, quantQ8_0, dotQ8_0},
	gguf.TypeQ8_1: {dequantQ8_1, quantQ8_1, nil},
	gguf.TypeQ2_K: {dequantQ2K, quantQ2K, dotQ2K},
	gguf.TypeQ3_K: {dequantQ3K, quantQ3K, dotQ3K},
	gguf.TypeQ4_K: {dequantQ4K, quantQ4K, dotQ4K},
	gguf.TypeQ5_K: {dequantQ5K, quantQ5K, dotQ5K},
	gguf.TypeQ6_K: {dequantQ6K, quantQ6K, dotQ6K},
	gguf.TypeQ8_K: {dequantQ8K, quantQ8K, nil},

	gguf.TypeIQ4_NL: {dequantIQ4NL, quantIQ4NL, dotIQ4NL},
	gguf.TypeIQ4_XS: {dequantIQ4XS, quantIQ4XS, dotIQ4XS},
	gguf.TypeTQ1_0:  {dequantTQ1, quantTQ1, dotTQ1},
	gguf.TypeTQ2_0:  {dequantTQ2, quantTQ2, dotTQ2},

	// Read-only: see WriteError.
	gguf.TypeIQ2_XXS: {dequantIQ2XXS, nil, dotIQ2XXS},
	gguf.TypeIQ2_XS:  {dequantIQ2XS, nil, dotIQ2XS},
	gguf.TypeIQ2_S:   {dequantIQ2S, nil, dotIQ2S},
	gguf.TypeIQ3_XXS: {dequantIQ3XXS, nil, dotIQ3XXS},
	gguf.TypeIQ3_S:   {dequantIQ3S, nil, dotIQ3S},
	gguf.TypeIQ1_S:   {dequantIQ1S, nil, dotIQ1S},
	gguf.TypeIQ1_M:   {dequantIQ1M, nil, dotIQ1M},
}

// formatTable indexes formats by type id so the hot path avoids a map.
var formatTable = func() (tab [64]format) {
	for t, f := range formats {
		tab[t] = f
	}
	return tab
}()

// formatOf returns t's format; ok is false for types this package lacks.
func formatOf(t gguf.TensorType) (f format, ok bool) {
	if int(t) >= len(formatTable) {
		return format{}, false
	}
	f = formatTable[t]
	return f, f.dequant != nil
}

// Supported reports whether Dequantize handles type t (and, for the types
// weights come in, VecDot). Quantize handles the subset Writable reports.
func Supported(t gguf.TensorType) bool {
	_, ok := formatOf(t)
	return ok
}

// Writable reports whether Quantize handles type t.
func Writable(t gguf.TensorType) bool {
	f, ok := formatOf(t)
	return ok && f.quant != nil
}

// ErrReadOnly is wrapped by the errors of Quantize for the types weft
// reads but does not write.
var ErrReadOnly = errors.New("read-only tensor type")

// WriteError explains why Quantize refuses type t.
func WriteError(t gguf.TensorType) error {
	if !Supported(t) {
		return UnsupportedError("", t)
	}
	return fmt.Errorf("%w %s: weft reads it but cannot write it; llama.cpp's quantizer searches the %s lattice "+
		"weighted by an importance matrix (llama-imatrix), which weft does not implement: quantize with llama-quantize --imatrix",
		ErrReadOnly, t, t)
}

// lookup returns t's format after checking that n elements of it occupy
// exactly nbytes.
func lookup(t gguf.TensorType, n, nbytes int) (format, error) {
	f, ok := formatOf(t)
	if !ok {
		return format{}, UnsupportedError("", t)
	}
	want, err := t.RowBytes(uint64(n))
	if err != nil {
		return format{}, err
	}
	if uint64(nbytes) != want {
		return format{}, fmt.Errorf("%d %s elements need %d bytes, got %d", n, t, want, nbytes)
	}
	return f, nil
}

// Dequantize converts len(dst) elements of type t from src to float32.
// len(dst) must be a multiple of t's block size and src exactly
// t.RowBytes(len(dst)) long. Results equal llama.cpp's dequantize_row_*.
func Dequantize(t gguf.TensorType, src []byte, dst []float32) error {
	f, err := lookup(t, len(dst), len(src))
	if err != nil {
		return err
	}
	f.dequant(src, dst)
	return nil
}

// Quantize converts src to type t with llama.cpp's reference quantizer (no
// importance matrix); types that are not Writable give an error wrapping
// ErrReadOnly. len(src) must be a multiple of t's block size and dst
// exactly t.RowBytes(len(src)) long.
func Quantize(t gguf.TensorType, src []float32, dst []byte) error {
	f, err := lookup(t, len(src), len(dst))
	if err != nil {
		return err
	}
	if f.quant == nil {
		return WriteError(t)
	}
	f.quant(src, dst)
	return nil
}

// QuantizeAlloc is Quantize into a freshly allocated buffer.
func QuantizeAlloc(t gguf.TensorType, src []float32) ([]byte, error) {
	if !Writable(t) {
		return nil, WriteError(t)
	}
	size, err := t.RowBytes(uint64(len(src)))
	if err != nil {
		return nil, err
	}
	dst := make([]byte, size)
	return dst, Quantize(t, src, dst)
}
