package gguf

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/weft-ml/weft/internal/safefile"
)

// Version is the GGUF version Write produces.
const Version = 3

// maxNameLen is ggml's tensor name limit (GGML_MAX_NAME, with its NUL).
const maxNameLen = 63

// TensorSpec is one tensor to write. Exactly one of Data and Stream is set:
// Data holds all its bytes; Stream writes them to w when the writer reaches
// the tensor, so a caller can generate a large model piece by piece.
type TensorSpec struct {
	Name   string
	Dims   []uint64 // innermost first
	Type   TensorType
	Data   []byte
	Stream func(w io.Writer) error
}

// Size returns the byte size the tensor's shape and type imply.
func (t *TensorSpec) Size() (uint64, error) { return TensorBytes(t.Type, t.Dims) }

// Write writes a GGUF v3 file to w: header, metadata in the given order,
// tensor infos, zero padding to the alignment (general.alignment, default 32),
// then each tensor's bytes padded to the alignment, as ggml's gguf writer lays
// them out. Tensor bytes are streamed; only the header is buffered.
func Write(w io.Writer, kv []KV, tensors []TensorSpec) error {
	header, sizes, align, err := encodeHeader(kv, tensors)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(header); err != nil {
		return err
	}
	for i := range tensors {
		if err := writeTensorData(bw, &tensors[i], sizes[i], align); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteFile writes a GGUF file to path through a temporary file in the same
// folder that is renamed into place only when everything was written. path
// may not be any of inputs (the files the data is read from).
func WriteFile(path string, kv []KV, tensors []TensorSpec, inputs ...string) error {
	return WriteFileWith(path, func(w io.Writer) error { return Write(w, kv, tensors) }, inputs...)
}

// WriteFileWith runs write on a temporary file beside path, syncs it and
// renames it to path; on any failure the temporary file is removed and path
// is left untouched. The rules are internal/safefile's.
func WriteFileWith(path string, write func(w io.Writer) error, inputs ...string) error {
	out, err := safefile.Create(path, inputs...)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := write(out); err != nil {
		return err
	}
	return out.Commit()
}

// encodeHeader validates the metadata and tensors and encodes everything
// before the data section, padding included.
func encodeHeader(kv []KV, tensors []TensorSpec) ([]byte, []uint64, uint64, error) {
	align, err := writeAlignment(kv)
	if err != nil {
		return nil, nil, 0, err
	}
	e := &encoder{b: make([]byte, 0, 1<<16)}
	e.b = append(e.b, Magic...)
	e.u32(Version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kv)))
	if err := e.metadata(kv); err != nil {
		return nil, nil, 0, err
	}
	sizes, err := e.tensorInfos(tensors, align)
	if err != nil {
		return nil, nil, 0, err
	}
	e.b = append(e.b, make([]byte, padding(uint64(len(e.b)), align))...)
	return e.b, sizes, align, nil
}

func writeAlignment(kv []KV) (uint64, error) {
	for _, p := range kv {
		if p.Key != "general.alignment" {
			continue
		}
		a, ok := p.Value.V.(uint32)
		if !ok || p.Value.Type != ValueUint32 {
			return 0, fmt.Errorf("gguf: general.alignment must be a uint32, not %s", p.Value.Type)
		}
		if a == 0 || a&(a-1) != 0 {
			return 0, fmt.Errorf("gguf: general.alignment %d is not a positive power of two", a)
		}
		return uint64(a), nil
	}
	return DefaultAlignment, nil
}

func (e *encoder) metadata(kv []KV) error {
	seen := make(map[string]bool, len(kv))
	for _, p := range kv {
		if seen[p.Key] {
			return fmt.Errorf("gguf: duplicate metadata key %q", p.Key)
		}
		seen[p.Key] = true
		e.str(p.Key)
		e.u32(uint32(p.Value.Type))
		if err := e.value(p.Value, 0); err != nil {
			return fmt.Errorf("gguf: metadata key %q: %w", p.Key, err)
		}
	}
	return nil
}

// tensorInfos encodes the tensor table with data offsets laid out back to
// back, each padded to the alignment, and returns every tensor's size.
func (e *encoder) tensorInfos(tensors []TensorSpec, align uint64) ([]uint64, error) {
	sizes := make([]uint64, len(tensors))
	seen := make(map[string]bool, len(tensors))
	var off uint64
	for i := range tensors {
		t := &tensors[i]
		size, err := checkSpec(t, seen)
		if err != nil {
			return nil, err
		}
		sizes[i] = size
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(off)
		off += size + padding(size, align)
	}
	return sizes, nil
}

func checkSpec(t *TensorSpec, seen map[string]bool) (uint64, error) {
	switch {
	case t.Name == "":
		return 0, errors.New("gguf: tensor with an empty name")
	case len(t.Name) > maxNameLen:
		return 0, fmt.Errorf("gguf: tensor name %q is longer than %d bytes", t.Name, maxNameLen)
	case seen[t.Name]:
		return 0, fmt.Errorf("gguf: duplicate tensor name %q", t.Name)
	case len(t.Dims) == 0 || len(t.Dims) > maxDims:
		return 0, fmt.Errorf("gguf: tensor %q has %d dimensions (1 to %d allowed)", t.Name, len(t.Dims), maxDims)
	case (t.Data == nil) == (t.Stream == nil):
		return 0, fmt.Errorf("gguf: tensor %q needs exactly one of Data and Stream", t.Name)
	}
	seen[t.Name] = true
	size, err := t.Size()
	if err != nil {
		return 0, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
	}
	if t.Data != nil && uint64(len(t.Data)) != size {
		return 0, fmt.Errorf("gguf: tensor %q (%s, dims %v) has %d data bytes, want %d", t.Name, t.Type, t.Dims, len(t.Data), size)
	}
	return size, nil
}

func padding(n, align uint64) uint64 { return (align - n%align) % align }

var zeros [256]byte

func writeTensorData(w io.Writer, t *TensorSpec, size, align uint64) error {
	if t.Data != nil {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	} else {
		cw := &countingWriter{w: w, limit: size}
		if err := t.Stream(cw); err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if cw.n != size {
			return fmt.Errorf("gguf: tensor %q: stream wrote %d bytes, want %d", t.Name, cw.n, size)
		}
	}
	for pad := padding(size, align); pad > 0; {
		k := min(pad, uint64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		pad -= k
	}
	return nil
}

// countingWriter counts bytes and refuses to go past the tensor's size, so a
// faulty stream cannot shift every later tensor.
type countingWriter struct {
	w     io.Writer
	n     uint64
	limit uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.n+uint64(len(p)) > c.limit {
		return 0, fmt.Errorf("stream writes more than the tensor's %d bytes", c.limit)
	}
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}
