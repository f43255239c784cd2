package synth

import (
	"fmt"
	"io"
	"strings"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// RequantizeOptions control Requantize.
type RequantizeOptions struct {
	Type     FileType
	Workers  int       // conversion goroutines; 0 means 2
	Progress io.Writer // one line per tensor; nil for silence
}

// droppedKeys are rewritten (file type) or meaningless in a single output
// file (split.*), as llama-quantize does.
var droppedKeys = map[string]bool{
	"general.quantization_version": true, "general.file_type": true,
	"split.no": true, "split.count": true, "split.tensors.count": true,
}

// Requantize writes in converted to o.Type like llama-quantize: tensors in
// llama order, the mix's type for each quantizable weight, everything else
// copied unchanged (zero-copy from the mapping), metadata copied with
// general.file_type set.
func Requantize(in *gguf.File, w io.Writer, o RequantizeOptions) error {
	kv, specs, err := RequantizePlan(in, o)
	if err != nil {
		return err
	}
	return gguf.Write(w, kv, specs)
}

// RequantizePlan returns the output metadata and tensors of Requantize;
// converted tensors are produced when the writer streams them.
func RequantizePlan(in *gguf.File, o RequantizeOptions) ([]gguf.KV, []gguf.TensorSpec, error) {
	var kv []gguf.KV
	for _, p := range in.KV {
		if !droppedKeys[p.Key] {
			kv = append(kv, p)
		}
	}
	kv = append(kv,
		gguf.KV{Key: "general.quantization_version", Value: gguf.ValueOf(uint32(quantizationVersion))},
		gguf.KV{Key: "general.file_type", Value: gguf.ValueOf(o.Type.ID)})
	specs, err := requantSpecs(in, o)
	return kv, specs, err
}

func hparamsOf(f *gguf.File) Hparams {
	arch := f.Architecture()
	heads := int(f.Uint32(arch+".attention.head_count", 0))
	return Hparams{
		Layers:  int(f.Uint32(arch+".block_count", 0)),
		Heads:   heads,
		KVHeads: int(f.Uint32(arch+".attention.head_count_kv", uint32(heads))),
	}
}

func requantSpecs(in *gguf.File, o RequantizeOptions) ([]gguf.TensorSpec, error) {
	if arch := in.Architecture(); arch != "llama" && o.Type.quantized() {
		return nil, fmt.Errorf("architecture %q: quantization mixes follow llama.cpp's rules for llama only", arch)
	}
	names := make([]string, len(in.Tensors))
	for i, t := range in.Tensors {
		names[i] = t.Name
	}
	Order(names)
	mixer := NewMixer(o.Type, hparamsOf(in), names)
	specs := make([]gguf.TensorSpec, len(names))
	for i, name := range names {
		ti, _ := in.Tensor(name)
		t, err := mixer.TypeFor(name, ti.Dims, ti.Type)
		if err != nil {
			return nil, err
		}
		body := copyStream(in.TensorData(ti))
		if t != ti.Type {
			if body, err = convertStream(in, ti, t, o.workers()); err != nil {
				return nil, err
			}
		}
		specs[i] = gguf.TensorSpec{Name: name, Dims: ti.Dims, Type: t, Stream: withProgress(o, i, len(names), ti, t, body)}
	}
	return specs, nil
}

// convertStream dequantizes ti row by row and re-encodes it as type t.
func convertStream(in *gguf.File, ti *gguf.TensorInfo, t gguf.TensorType, workers int) (func(io.Writer) error, error) {
	for _, typ := range []gguf.TensorType{ti.Type, t} {
		if !quant.Supported(typ) {
			return nil, quant.UnsupportedError(ti.Name, typ)
		}
	}
	cols := int(ti.Dims[0])
	rows := int(ti.NumElements()) / max(cols, 1)
	srcRow, err := ti.Type.RowBytes(ti.Dims[0])
	if err != nil {
		return nil, err
	}
	data := in.TensorData(ti)
	fill := func(r int, dst []float32) error {
		off := uint64(r) * srcRow
		return quant.Dequantize(ti.Type, data[off:off+srcRow], dst)
	}
	return func(w io.Writer) error {
		if err := EncodeRows(w, t, rows, cols, fill, workers); err != nil {
			return fmt.Errorf("converting %s to %s: %w", ti.Type, t, err)
		}
		return nil
	}, nil
}

// copyStream writes a tensor's bytes unchanged.
func copyStream(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// withProgress prints a tensor's progress line before writing its bytes.
func withProgress(o RequantizeOptions, i, n int, ti *gguf.TensorInfo, t gguf.TensorType, body func(io.Writer) error) func(io.Writer) error {
	return func(w io.Writer) error {
		if o.Progress != nil {
			verb := "copy"
			if t != ti.Type {
				verb = "convert " + ti.Type.String() + " →"
			}
			fmt.Fprintf(o.Progress, "[%4d/%4d] %-32s %-12s %s %s\n", i+1, n, ti.Name, verb, t, shapeString(ti.Dims))
		}
		return body(w)
	}
}

func (o RequantizeOptions) workers() int {
	if o.Workers <= 0 {
		return 2
	}
	return o.Workers
}

func shapeString(dims []uint64) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
